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
shared are summed and, last, the similarity is computed.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable
from itertools import accumulate
from typing import NamedTuple

from rapidfuzz.distance import Indel

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
    """Whether ``this`` nearly repeats one of ``earlier`` (the length test inlined: most pairs end there)."""
    la = len(this.text)
    low, high = la * _SHORTEST, la * _LONGEST
    for other in earlier:
        if low <= len(other.text) <= high and _close(this, other):
            return True
    return False


def _no_key_shared(a: Message, b: Message) -> bool:
    """The first clause test, for two messages that both have clauses: the larger holds none of
    the smaller's key clauses, so they are not near-duplicates (most pairs end here)."""
    small, large = (a, b) if a.clause_chars <= b.clause_chars else (b, a)
    return large.clauses.isdisjoint(small.keys)


def _close(a: Message, b: Message) -> bool:
    """The clause tests, then the similarity itself, for two messages of compatible lengths."""
    if a.clauses and b.clauses and _no_key_shared(a, b):
        return False
    return _close_sharing_keys(a, b)


def _close_sharing_keys(a: Message, b: Message) -> bool:
    """``_close`` for two messages known to pass ``_no_key_shared``'s test: the rest of it."""
    if a.clauses and b.clauses:
        small = a if a.clause_chars <= b.clause_chars else b
        if 2 * sum(map(len, a.clauses & b.clauses)) < small.clause_chars:
            return False
    # the longer first: rapidfuzz takes 9% less time so on the long pairs that get here, for the same value
    longer, shorter = (a.text, b.text) if len(a.text) >= len(b.text) else (b.text, a.text)
    return Indel.normalized_similarity(longer, shorter, score_cutoff=NEAR_DUPLICATE) >= NEAR_DUPLICATE


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
        if not m.clauses:  # then ``_close`` is the similarity alone: computed here, not two calls down
            text = m.text
            return any(Indel.normalized_similarity(text, other.text, score_cutoff=NEAR_DUPLICATE) >= NEAR_DUPLICATE
                       for other in self.by_length[lo:hi])
        # a long window holds dozens of candidates, most of which fail the first test: it is made
        # here (``_no_key_shared`` inlined), and those that pass go on to the rest of _close
        clauses, keys, chars = m.clauses, m.keys, m.clause_chars
        for other in self.by_length[lo:hi]:
            if other.clauses and (other.clauses.isdisjoint(keys) if chars <= other.clause_chars
                                  else clauses.isdisjoint(other.keys)):
                continue
            if _close_sharing_keys(m, other):
                return True
        return False

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
