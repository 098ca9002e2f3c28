"""The shortcuts the rule detectors take are exact: each gives what the plain computation gives."""

from __future__ import annotations

import json
import random
import re

from rapidfuzz.distance import Indel

from annotator.labelling.grounding import normalise
from annotator.labelling.near_duplicates import CLAUSE_CHARS, COMPARED_CHARS, NEAR_DUPLICATE, _similar, message
from annotator.labelling.termination import _ANCHORS, _TERMINATION, _termination_matches, bare_termination, is_termination

#: Texts that stress the prefix reading: whitespace-heavy, case folding that lengthens (ß), long.
CRAFTED = [
    "", "   ", "short", "x" * 5000, ("word \n\t  " * 900), "Straße " * 700, ("{\n    \"key\": \"value\",\n" * 300),
    "a" * 1999 + " " * 500 + "b" * 10, "TERMINATE" + "." * 3000, "ﬁnal answer " * 300,
    # beyond ASCII: clauses of fewer characters than bytes, of more, typographic quotes, a lone surrogate
    ("éééééé, " + "ab’cdefghijk; " + "中文字符的句子很长吗, " + "“quoted text here” \ud800 x" * 3) * 20,
]


def who_and_when_texts(shared_data) -> list[str]:
    texts = []
    for path in sorted((shared_data / "who_and_when").glob("*.json")):
        texts += [str(m.get("content") or "") for m in json.loads(path.read_text()).get("history", [])]
    return texts


def test_message_reads_the_normalised_head_and_its_clauses(shared_data):
    for text in CRAFTED + who_and_when_texts(shared_data):
        m, full = message(text), normalise(text)
        assert m.text == full[:COMPARED_CHARS]
        assert m.whole is False or full == m.text  # whole: nothing beyond the head
        if len(full) <= COMPARED_CHARS and len(text) <= COMPARED_CHARS:
            assert m.whole
        if m.clauses is None:
            continue
        split = {c for c in re.split(r"[.!?;:,)(\]\[{}|]", m.text) if len(c) >= CLAUSE_CHARS}
        assert m.clauses == split and m.clause_chars == sum(map(len, split))
        if split:  # the key clauses hold more than half of the clause text
            assert 2 * sum(map(len, m.keys)) > m.clause_chars and set(m.keys) <= split


def test_the_similarity_from_the_lcs_is_rapidfuzz_s(shared_data):
    """``_similar`` (the LCS under a whole-number cutoff) answers as the Indel similarity with its
    own cutoff does: right at ``NEAR_DUPLICATE`` and one edit either side of it (``d`` characters
    deleted from ``n``: the LCS is ``n - d``, the similarity 0.9 when ``d = 2n / 11``), on texts
    edited at random, and on the heads of real messages of compatible lengths."""
    rng = random.Random(13)
    pairs = []
    for j in range(1, 190, 3):
        a = "".join(rng.choices("abcde ", k=11 * j))
        for d in (2 * j - 1, 2 * j, 2 * j + 1):
            gone = set(rng.sample(range(len(a)), d))
            pairs.append((a, "".join(c for i, c in enumerate(a) if i not in gone)))
    for n in [*range(1, 120), 200, 640, 2000]:
        a = "".join(rng.choices("abcde ", k=n))
        for _ in range(6):
            b = list(a)
            for _ in range(rng.randint(0, n // 3 + 1)):
                at = rng.randrange(len(b) + 1)
                if b and rng.random() < 0.5:
                    del b[min(at, len(b) - 1)]
                else:
                    b.insert(at, rng.choice("abcdef "))
            pairs.append((a, "".join(b)))
    heads = sorted((message(t).text for t in who_and_when_texts(shared_data)), key=len)
    pairs += [(a, b) for a, b in zip(heads, heads[1:]) if a]
    pairs += [(b, a) for a, b in pairs]
    near = [Indel.normalized_similarity(a, b, score_cutoff=NEAR_DUPLICATE) >= NEAR_DUPLICATE for a, b in pairs]
    assert [_similar(a, b) for a, b in pairs] == near
    assert 0.2 * len(pairs) < sum(near) < 0.8 * len(pairs)
    assert sum(Indel.normalized_similarity(a, b) == NEAR_DUPLICATE for a, b in pairs) >= 100


def test_normalise_folds_ascii_as_str_split_and_casefold_do(shared_data):
    """The ASCII path (bytes, one table) gives what the plain computation gives, including the
    control characters str.split takes for whitespace."""
    rng = random.Random(5)
    pieces = [" ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x00", "\x7f", "A",
              "Zebra", "word", "é", "\xa0", "\x85", "\u2003", "\u3000", "É", "ß", "İ", "ı", "ſ", "K", "ﬁ", "ς", "’", "中文",
              "😀", "\ud800", "\udc00"]
    texts = CRAFTED + who_and_when_texts(shared_data)
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 20))) for _ in range(5000)]
    for text in texts:
        assert normalise(text) == " ".join(text.split()).casefold(), repr(text)


def test_normalise_folds_every_character_as_str_split_and_casefold_do():
    """The path for a text beyond ASCII whose other characters casefolding leaves alone (as UTF-8
    bytes) against the plain computation, for every character between ASCII words."""
    for c in map(chr, range(0x80, 0x110000)):
        text = f"Word {c}X\t{c}"
        assert normalise(text) == " ".join(text.split()).casefold(), repr(text)


def test_termination_words_are_found_where_the_regex_scan_finds_them(shared_data):
    rng = random.Random(7)
    pieces = ["<", " ", "\n", "\xa0", "\u2003", "final", " answer", "_answer", "terminate", "FINAL", "TERMINATE", "Nate",
              "x", "é", "ı", "İ", "ſ", "ß", "fınal", "termınate", " anſwer", ">", ".", "'"]
    texts = who_and_when_texts(shared_data)
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 14))) for _ in range(20000)]
    for text in texts:
        assert [m.span() for m in _termination_matches(text)] == [m.span() for m in _TERMINATION.finditer(text)]


def test_the_anchor_letters_match_ascii_letters_only():
    """What the anchors rest on: IGNORECASE matches their letters with no character beyond ASCII."""
    letters = {chr(c) for anchor, _, head in _ANCHORS for c in anchor + head}
    assert letters - {" ", "_"} <= set("aeflnrt")
    beyond_ascii = "".join(map(chr, range(0x80, 0x110000)))
    assert re.compile("[k]", re.IGNORECASE).search(beyond_ascii).group() == "\u212a"  # Kelvin sign: the search sees them
    assert re.compile(f"[{re.escape(''.join(sorted(letters)))}]", re.IGNORECASE).search(beyond_ascii) is None


def test_is_termination_on_ascii_and_other_text():
    assert is_termination("All done. TERMINATE")
    assert is_termination("Voilà, c'est fini. <FINAL_ANSWER> 42 </final_answer>")
    assert not is_termination('let other participant reply me only with "TERMINATE"')
    assert not is_termination("Le mot « final » n'y suffit pas.")
    assert is_termination("Fertig ✓ TERMINATE") and not is_termination('réponds “TERMINATE”')
    assert not is_termination("Fertig ✓ TERMINATE".replace("I", "ı"))  # IGNORECASE matches it, casefold does not


def test_the_folded_text_rules_termination_out_as_the_scan_does(shared_data):
    """Given the folded text, a text without the anchors' letters there is no signal; with it,
    the same answer as without; and a bare termination word is what the pattern finds whole."""
    rng = random.Random(11)
    pieces = ["<", " ", "\n", "\xa0", "final", " answer", "_answer", "terminate", "FINAL", "TERMINATE", "Nate", "NAL",
              "x", "é", "ı", "İ", "ß", "fınal", "termınate", "TERMİNATE", "term", "Term", "nal an", "nal", "ſ", "anſwer",
              ">", ".", "'", '"', "reply with ", "done"]
    texts = CRAFTED + who_and_when_texts(shared_data)
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 14))) for _ in range(20000)]
    for text in texts:
        assert is_termination(text, normalise(text)) == is_termination(text), repr(text)
        bare = _TERMINATION.fullmatch(normalise(text).strip(". ")) is not None
        assert bare_termination(message(text), text) == bare, repr(text)
