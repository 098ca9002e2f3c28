"""Checking a judge's answer against the codebook and the trajectory before it is believed.

Two levels. An answer that names modes the codebook does not have, leaves modes out, or cites
steps that do not exist is *invalid*: it is sent back to the judge with the reason, and if it
stays invalid the trajectory is recorded as failed; such an answer is never stored. A verdict
"present" whose quote cannot be found (whitespace normalised) in any cited step is *ungrounded*:
it is stored, flagged ``grounded=False``, so a reviewer sees that the judge's evidence did not
check out instead of trusting it (MAST's own lesson: verify externally, here applied to the judge).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from annotator.labelling.verdicts import InvalidAnswer, JudgeAnswer, ModeVerdict
from annotator.models import Step
from annotator.taxonomy import Taxonomy

#: What ``normalise`` does to an ASCII text, a byte at a time: capitals lowered, and every
#: character ``str.split`` takes for whitespace (``\\x1c``-``\\x1f`` among them) made a space.
_ASCII_WHITESPACE = "".join(c for c in map(chr, range(128)) if c.isspace())
_ASCII_FOLD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ" + _ASCII_WHITESPACE.encode(),
                              b"abcdefghijklmnopqrstuvwxyz" + b" " * len(_ASCII_WHITESPACE))
_SPACES = re.compile(b"  +")
#: The ASCII bytes, which deleted from a UTF-8 text leave the characters beyond ASCII.
_ASCII_BYTES = bytes(range(128))


def normalise(text: str) -> str:
    """Whitespace folded and case ignored: how quotes are compared with steps (str.split folds
    every run of whitespace, as ``\\s+`` does, at a quarter of a regex's cost; an ASCII text
    casefolds as it lowercases). An ASCII text is folded as bytes, in one table and one pass
    over its runs of spaces, without a string a word; so is a text whose characters beyond ASCII
    are neither whitespace nor changed by casefolding (typographic quotes, dashes, CJK: most
    text that is not ASCII is nearly all ASCII, and splitting and casefolding it as a string
    cost four times as much), as its UTF-8 bytes, where those characters' bytes are left alone."""
    if text.isascii():
        return _fold_ascii(text.encode("ascii")).decode("ascii")
    data = text.encode("utf-8", "surrogatepass")
    beyond = data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
    if beyond.split() == [beyond] and beyond.casefold() == beyond:
        return _fold_ascii(data).decode("utf-8", "surrogatepass")
    folded = " ".join(text.split())
    return folded.lower() if folded.isascii() else folded.casefold()


def _fold_ascii(data: bytes) -> bytes:
    """``data``'s ASCII capitals lowered and its runs of ASCII whitespace made one space, trimmed."""
    return _SPACES.sub(b" ", data.translate(_ASCII_FOLD)).strip(b" ")


def quote_in_steps(quote: str, by_index: Mapping[int, Step], cited: Sequence[int]) -> bool:
    """Whether ``quote`` occurs in one of the ``cited`` steps (content or tool arguments).

    ``by_index`` maps step index to step; the caller builds it once for all of an answer's quotes.
    """
    needle = normalise(quote.strip().strip("\"'“”…").strip())
    if not needle:
        return False
    for i in cited:
        step = by_index.get(i)
        if step is None:
            continue
        if needle in normalise(step.content) or (step.tool_args and needle in normalise(step.tool_args)):
            return True
    return False


def check_answer(answer: JudgeAnswer, taxonomy: Taxonomy, steps: Sequence[Step]) -> list[ModeVerdict]:
    """Validate ``answer`` and turn it into verdicts with ``grounded`` set.

    ``steps`` are the steps the judge was shown (a window); citing any other step is invalid.
    Raises InvalidAnswer with a message fit to send back to the judge.
    """
    by_index = {s.index: s for s in steps}
    first, last = min(by_index, default=0), max(by_index, default=-1)
    problems: list[str] = []
    seen: dict[str, ModeVerdict] = {}
    known = set(taxonomy.mode_ids)
    for item in answer.modes:
        mode_id = item.mode_id if item.mode_id in known else taxonomy.resolve(item.mode_id)
        if mode_id is None:
            problems.append(f"unknown mode id {item.mode_id!r}")
            continue
        if mode_id in seen:
            problems.append(f"mode {mode_id} is answered more than once")
            continue
        cited = ([item.onset_step] if item.onset_step is not None else []) + list(item.evidence_steps)
        bad = [i for i in cited if i not in by_index]
        if bad:
            problems.append(
                f"{mode_id}: step(s) {', '.join(map(str, bad))} do not exist "
                f"(valid steps: {first}..{last})"
            )
            continue
        if item.present:
            onset = item.onset_step if item.onset_step is not None else (min(cited) if cited else None)
            grounded = bool(cited) and bool(item.quote) and quote_in_steps(item.quote or "", by_index, cited)
            seen[mode_id] = ModeVerdict(
                mode_id=mode_id,
                verdict="present",
                onset_step=onset,
                evidence_steps=sorted(set(item.evidence_steps) - {onset}),
                quote=item.quote,
                rationale=item.rationale,
                confidence=item.confidence,
                grounded=grounded,
            )
        else:
            seen[mode_id] = ModeVerdict(
                mode_id=mode_id, verdict="absent", rationale=item.rationale, confidence=item.confidence
            )
    missing = [m for m in taxonomy.mode_ids if m not in seen]
    if missing:
        problems.append(f"no answer for mode(s) {', '.join(missing)}")
    if problems:
        raise InvalidAnswer("; ".join(problems))
    return [seen[m] for m in taxonomy.mode_ids]
