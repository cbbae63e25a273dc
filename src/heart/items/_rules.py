"""The rule-based screen: cue lexicons and the rule that decides each candidate couplet.

Every rule has a name that is stored with the couplet it decided, so a reader can see why any
couplet of the corpus was kept or dropped. The lexicons are deliberately small and readable.
Every pattern runs in time linear in the text, whatever its shape (no unbounded repeat is tried
from more than one start inside a run, or backtracks into another), so one huge token in a
corpus cannot stall a build.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _words(*phrases: str) -> re.Pattern[str]:
    """One case-insensitive pattern matching any phrase at word boundaries (``*`` = word tail)."""
    parts = [re.escape(p).replace(r"\*", r"\w*") for p in phrases]
    return re.compile(r"\b(?:" + "|".join(parts) + r")\b", re.IGNORECASE)


# fmt: off
# (a) response potential: distress, conflict, or an explicit request for help
DISTRESS = _words(
    "depress*", "anxious", "anxiety", "stress*", "overwhelm*", "hopeless", "helpless",
    "lonely", "alone", "sad", "sadness", "unhappy", "miserable", "scared", "afraid", "fear*",
    "worr*", "nervous", "panic*", "upset", "hurt*", "cry*", "cried", "tears", "heartbroken",
    "devastated", "exhausted", "angry", "furious", "frustrat*", "ashamed", "embarrass*",
    "guilty", "worthless", "useless", "failure", "stuck", "struggl*", "hard time", "terrible",
    "awful", "horrible", "pain*", "griev*", "grief", "bullied", "rejected", "abandoned",
    "betrayed", "fired", "laid off", "lost my job", "unemployed", "broke up", "break up",
    "breakup", "divorc*", "give up", "giving up", "can't sleep", "cannot sleep", "insomnia",
    "down", "low", "lost", "empty", "drained", "burned out", "burnt out", "hate my",
)
CONFLICT = _words(
    "fight*", "fought", "argue*", "argument*", "yell*", "shout*", "blame*", "conflict",
    "disagree*", "cheat*", "ignor*", "mad at", "toxic", "controlling", "won't listen",
    "doesn't listen", "don't get along", "fell out",
)
REQUEST = _words(
    "what should i do", "what do i do", "what can i do", "don't know what to do",
    "dont know what to do", "do not know what to do", "should i", "any advice", "advice",
    "any suggestions", "suggestions", "how do i", "how can i", "how should i", "help me",
    "need help", "what would you do", "is it normal", "am i wrong", "is it wrong",
    "where do i start", "don't know how", "do you think i",
)

# (b) turns that admit only one kind of answer
CLOSING = _words(
    "thank*", "bye", "goodbye", "good night", "take care", "have a good", "you too",
    "nice talking", "talk to you later", "appreciate it",
)

# (c) needs specialised clinical expertise
CLINICAL = _words(
    "medication*", "meds", "prescri*", "dosage", "dose", "mg", "antidepressant*", "ssri*",
    "xanax", "zoloft", "prozac", "lexapro", "diagnos*", "bipolar", "schizophreni*",
    "psychosis", "psychotic", "hallucinat*", "eating disorder", "anorexi*", "bulimi*", "ptsd",
    "seizure*", "psychiatrist",
)

# safety: explicit self-harm plans, hate speech, identifying information
SELF_HARM = _words(
    "kill myself", "killing myself", "end my life", "ending my life", "end it all",
    "take my own life", "take my life", "suicide", "suicidal", "overdose", "hang myself",
    "slit my", "cut myself", "cutting myself", "hurt myself", "harm myself", "want to die",
    "better off dead", "not want to live", "don't want to live", "don't want to be alive",
    "saving up pills", "saving pills", "take all the pills", "take all my pills",
    "swallow all", "jump off",
)
_GROUPS = (
    "blacks|whites|jews|muslims|gays|lesbians|immigrants|mexicans|asians|arabs|"
    "christians|women|men|foreigners|refugees|trans people"
)
HATE = re.compile(
    rf"\b(?:all|those|these|the)\s+(?:{_GROUPS})\b[^.!?]{{0,40}}\b(?:are|should)\b[^.!?]{{0,30}}"
    r"\b(?:animals|vermin|scum|subhuman|die|be killed|disgusting|inferior|parasites|go back)\b"
    r"|\b(?:subhuman|vermin|parasites)\b[^.!?]{0,20}\b(?:" + _GROUPS + r")\b",
    re.IGNORECASE,
)
IDENTIFYING = re.compile(
    r"(?:\+?\d{1,2}[\s.-]?)?\(?\b\d{3}\)?[\s.-]?\d{3}[\s.-]\d{4}\b"  # phone number
    r"|\b\d{3}-\d{2}-\d{4}\b"  # social security style number
    r"|(?<![\w.+-])[\w.+-]++@[\w-]++\.[\w.-]++"  # email address, tried at a run's start only
    r"|\bhttps?://\S+|\bwww\.\S+"  # web address
    r"|\b\d{1,5}\s+(?:[A-Z][a-z]+\s+){1,3}"
    r"(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct)\b"  # street
    r"|\bmy (?:full )?name is [A-Z][a-z]+ [A-Z][a-z]+",  # full name
)
# fmt: on

MIN_WORDS = 10
MIN_CUES = 2  # distinct distress/conflict cues that make a clear signal without a request


@dataclass(frozen=True)
class Screened:
    """The screen's verdict on one couplet: eligible or not, the deciding rule, and its evidence."""

    eligible: bool
    rule: str
    detail: str = ""
    score: float = 0.0


SAFETY_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("unsafe:self_harm_plan", SELF_HARM),
    ("unsafe:hate_speech", HATE),
    ("unsafe:identifying_info", IDENTIFYING),
)
"""The safety rules in the order they are tried, each with its pattern."""


def safety_rule(texts: list[str]) -> Screened | None:
    """The first safety rule any text breaks, or ``None`` when all are safe."""
    for rule, pattern in SAFETY_RULES:
        for text in texts:
            match = pattern.search(text)
            if match:
                return Screened(False, rule, f"matched {match.group(0)!r}")
    return None


def _found(pattern: re.Pattern[str], text: str) -> list[str]:
    return sorted({m.group(0).lower() for m in pattern.finditer(text)})


def screen_seeker_turn(text: str) -> Screened:
    """Response potential and the three criteria, applied to the seeker turn ending a context."""
    distress, conflict, request = (_found(p, text) for p in (DISTRESS, CONFLICT, REQUEST))
    if not (distress or conflict or request):
        return Screened(False, "no_response_potential")
    n_words = len(text.split())
    closing = _found(CLOSING, text)
    if closing and n_words <= 20 and not request:
        return Screened(False, "closing_turn", ", ".join(closing))
    clinical = _found(CLINICAL, text)
    if clinical:
        return Screened(False, "needs_clinical_expertise", ", ".join(clinical))
    if n_words < MIN_WORDS or (not request and len(distress) + len(conflict) < MIN_CUES):
        found = ", ".join(distress + conflict) or "none"
        return Screened(False, "weak_emotional_signal", f"{n_words} words; cues: {found}")
    kind = "request" if request else "conflict" if conflict else "distress"
    cues = distress + conflict + request
    score = len(set(distress)) + 1.5 * len(set(conflict)) + 2.0 * len(set(request))
    score += min(n_words, 60) / 60
    return Screened(True, f"potential:{kind}", ", ".join(cues), score)
