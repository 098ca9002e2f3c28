"""Near-duplicate messages: how the rule detectors tell that a message nearly repeats another.

Two messages are near-duplicates when the normalised Indel similarity of their normalised heads
(whitespace folded, casefolded, the first ``COMPARED_CHARS`` characters) is at least
``NEAR_DUPLICATE`` (rapidfuzz: 2·LCS / total length), and, when both are long, when the clauses
they share make up at least half of the smaller one's clause text (clauses: the text split at
punctuation, each at least ``CLAUSE_CHARS`` long). A message that is 90% the same as another
keeps most of its clauses whole, while unrelated messages that share a line of boilerplate or a
JSON skeleton do not.

The similarity costs microseconds a pair and a detector meets millions of pairs on a long run,
so each message is read once into a ``Message`` (its head, clauses and key clauses) and every
pair goes through tests that are exact but cheaper first: lengths that alone rule the similarity
out (rapidfuzz's own bound), an exact repeat by hash, then one set lookup: the shared half must
contain one of the smaller message's key clauses (its longest ones, together more than half of
its clause text; two disjoint sets cannot each hold more than half of it), before the clauses
shared are summed and, last, the similarity is computed (from the LCS under a whole-number
cutoff, ``_similar``). A speaker's window and the task's references go through the same loop.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable
from itertools import accumulate
from typing import NamedTuple

from rapidfuzz.distance import Indel, LCSseq

from annotator.labelling.grounding import normalise

#: Shortest message that counts when comparing messages (greetings repeat legitimately).
MIN_CHARS = 40
#: Similarity above which two messages are near-duplicates.
NEAR_DUPLICATE = 0.9
#: Characters of a message that take part in comparisons.
COMPARED_CHARS = 2000
#: Messages at least this long are compared only with those sharing a clause.
SKETCH_CHARS = 200
#: Shortest clause that counts as shared (shorter ones recur in unrelated messages).
CLAUSE_CHARS = 12
#: A clause that counts: a run of at least ``CLAUSE_CHARS`` characters between punctuation.
_PUNCTUATION = ".!?;:,)(][{}|"
_CUT = bytes.maketrans(_PUNCTUATION.encode(), b"|" * len(_PUNCTUATION))
#: Raw characters normalised first to find a head (twice as many again while they fold to fewer
#: than ``COMPARED_CHARS``: a text heavy with whitespace).
_RAW_HEAD = COMPARED_CHARS + COMPARED_CHARS // 10


class Message(NamedTuple):
    """A message as comparisons read it.

    ``text``: the head of the normalised content; ``whole``: False when the content may go on
    beyond it (it is then at least ``COMPARED_CHARS`` long). A long message has its distinct
    clauses, their total length and its key clauses; a short one None, 0 and None.
    """

    text: str
    whole: bool
    clauses: frozenset[str] | None
    clause_chars: int
    keys: tuple[str, ...] | None


EMPTY = Message("", True, None, 0, None)


def message(content: str) -> Message:
    """``content`` read once for every comparison (normalised, its clauses hashed)."""
    if not content:
        return EMPTY
    # normalising a prefix gives a prefix of the normalised text (case folding and whitespace
    # folding both work a character or a run at a time): read as much as the head needs
    read = _RAW_HEAD
    text = normalise(content[:read])
    while len(text) < COMPARED_CHARS and read < len(content):
        read *= 2
        text = normalise(content[:read])
    whole = read >= len(content) and len(text) <= COMPARED_CHARS
    text = text[:COMPARED_CHARS]
    if len(text) < SKETCH_CHARS:
        return Message(text, whole, None, 0, None)
    clauses = _clauses(text)
    if not clauses:
        return Message(text, whole, clauses, 0, None)
    longest = sorted(clauses, key=len, reverse=True)
    covered = list(accumulate(map(len, longest)))
    total = covered[-1]
    # the keys: the longest up to the first whose running total is more than half (c > total // 2)
    return Message(text, whole, clauses, total, tuple(longest[: bisect_right(covered, total // 2) + 1]))


def _clauses(text: str) -> frozenset[str]:
    """The distinct clauses of ``text``, found as bytes (a regex tries every position): its
    punctuation made one byte in one table and split at, the clauses decoded. A text beyond
    ASCII is cut as UTF-8, whose bytes of other characters are never punctuation; a piece is a
    clause when its characters, not its bytes, are ``CLAUSE_CHARS`` or more."""
    if text.isascii():  # decoded whole and split as a string: one decoding, not one a clause
        cut = text.encode("ascii").translate(_CUT).decode("ascii").split("|")
        return frozenset([c for c in cut if len(c) >= CLAUSE_CHARS])
    cut = text.encode("utf-8", "surrogatepass").translate(_CUT).split(b"|")
    return frozenset([clause for c in cut
                      if len(c) >= CLAUSE_CHARS and len(clause := c.decode("utf-8", "surrogatepass")) >= CLAUSE_CHARS])


def whole_text(m: Message, content: str) -> str:
    """All of the normalised content (the head, unless the content goes on beyond it)."""
    return m.text if m.whole else normalise(content)


#: The lengths another text may have and still be ``NEAR_DUPLICATE`` similar, as factors of a
#: text's length (the Indel distance is at least the difference of the lengths).
_SHORTEST, _LONGEST = NEAR_DUPLICATE / (2 - NEAR_DUPLICATE), (2 - NEAR_DUPLICATE) / NEAR_DUPLICATE


def near_duplicate_of(this: Message, earlier: Iterable[Message]) -> bool:
    """Whether ``this`` nearly repeats one of ``earlier``."""
    la = len(this.text)
    low, high = la * _SHORTEST, la * _LONGEST
    return _repeats(this, [other for other in earlier if low <= len(other.text) <= high])


def _repeats(m: Message, candidates: Iterable[Message]) -> bool:
    """Whether ``m`` nearly repeats one of ``candidates``, messages of compatible lengths: the
    clause tests, then the similarity. A speaker's window holds dozens of candidates and most
    fail the first test, so both clause tests are made here, in the loop, not in a call a pair."""
    text = m.text
    if not m.clauses:  # the similarity alone, of short texts: rapidfuzz's call costs less there than _similar's
        return any(Indel.normalized_similarity(text, other.text, score_cutoff=NEAR_DUPLICATE) >= NEAR_DUPLICATE
                   for other in candidates)
    clauses, keys, chars = m.clauses, m.keys, m.clause_chars
    for other in candidates:
        theirs = other.clauses
        if theirs:  # the smaller's key clauses in the larger, then the clauses they share, summed
            if chars <= other.clause_chars:
                if theirs.isdisjoint(keys) or 2 * sum(map(len, clauses & theirs)) < chars:
                    continue
            elif clauses.isdisjoint(other.keys) or 2 * sum(map(len, clauses & theirs)) < other.clause_chars:
                continue
        if _similar(text, other.text):
            return True
    return False


def _similar(a: str, b: str) -> bool:
    """Whether the normalised Indel similarity of ``a`` and ``b`` is at least ``NEAR_DUPLICATE``,
    as rapidfuzz's ``Indel.normalized_similarity`` computes it (1 - (total - 2·LCS) / total, in
    floating point), from the LCS: rapidfuzz finds an LCS under a whole-number cutoff in about 40%
    less time than the similarity under its own on the long pairs that get here. The cutoff is
    one below the least LCS that can reach ``NEAR_DUPLICATE`` (an LCS below it leaves the
    similarity at least 2 / total short), so the LCS is exact wherever the answer can be yes."""
    total = len(a) + len(b)
    longer, shorter = (a, b) if len(a) >= len(b) else (b, a)  # rapidfuzz takes less time so, for the same value
    lcs = LCSseq.similarity(longer, shorter, score_cutoff=max(0, int(total * NEAR_DUPLICATE / 2) - 1))
    return not total or 1.0 - (total - 2 * lcs) / total >= NEAR_DUPLICATE


class Recent:
    """The last ``size`` messages of one speaker: in arrival order (to forget the oldest), by
    length (so that only those of compatible lengths are looked at), and a count of each text
    (exact repeats). ``messages``: the speaker's earlier ones, oldest first, to begin with."""

    __slots__ = ("by_length", "lengths", "messages", "size", "texts")

    def __init__(self, size: int, messages: Iterable[Message] = ()):
        self.messages: deque[Message] = deque()
        self.lengths: list[int] = []
        self.by_length: list[Message] = []
        self.texts: dict[str, int] = {}
        self.size = size
        for m in messages:
            self.add(m)

    def repeated_by(self, m: Message) -> bool:
        """Whether ``m`` nearly repeats one of these messages."""
        if m.text in self.texts:
            return True
        la = len(m.text)
        lo, hi = bisect_left(self.lengths, la * _SHORTEST), bisect_right(self.lengths, la * _LONGEST)
        return _repeats(m, self.by_length[lo:hi])

    def add(self, m: Message) -> None:
        texts = self.texts
        if len(self.messages) == self.size:
            old = self.messages.popleft()
            at = bisect_left(self.lengths, len(old.text))
            while self.by_length[at] is not old:
                at += 1
            del self.lengths[at], self.by_length[at]
            if texts[old.text] == 1:
                del texts[old.text]
            else:
                texts[old.text] -= 1
        self.messages.append(m)
        at = bisect_right(self.lengths, len(m.text))
        self.lengths.insert(at, len(m.text))
        self.by_length.insert(at, m)
        texts[m.text] = texts.get(m.text, 0) + 1
