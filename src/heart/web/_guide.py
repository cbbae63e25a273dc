"""What a participant reads before the first task: the information and consent text, the five
axes as the judges' rubric words them, one worked example per choice of the scale, and the
practice pair with the answer careful readers give."""

from __future__ import annotations

import re
from dataclasses import dataclass

from heart.config import PeopleSpec
from heart.errors import ConfigError
from heart.people import CHOICES
from heart.prompts import load_prompt
from heart.types import Axis, Shown, sha256_hex

DEFAULT_CONSENT = """\
This study compares replies to people who are going through a hard time: replies written by \
people and replies written by computer programs (AI language models). It is run by \
{researcher}.{ethics} Taking part is voluntary: you may stop at any time, without giving a \
reason. You must be {min_age} or older to take part.{pay} Some conversations touch on painful \
things such as loss, loneliness or conflict; take a break whenever you need one.

What we collect: the replies you write, the choices you make when you compare replies \
(your verdicts), the reasons you give for them, the strategy labels you tick, and the times \
at which each task was shown and sent. You appear in the data only under a pseudonymous id, a \
random code that does not name you. If you came from Prolific, your Prolific id is kept only \
as a one-way hash, so it cannot be read back, together with the study and session ids of your \
link. Please do not write anything that names or identifies you or anyone else.

How it is used: to measure which replies people find most supportive, how far people agree \
with each other, and how closely AI judges agree with people. Results are reported in summary, \
and the answers themselves may be shared with other researchers as a research data set, in \
which you appear only under the pseudonymous id. Quality checks are part of some tasks; \
answers that fail them may be left out of the analyses.

If you have a question, {contact}."""
"""The consent text when the study file sets no ``people.consent``, its slots filled by
`default_consent`."""


def default_consent(people: PeopleSpec) -> str:
    """The default consent text with the study's researcher, ethics approval, youngest age and
    pay (each left out, or said generally, when the study file does not set it)."""
    pay = ""
    if people.pay_per_hour is not None:
        pay = (
            f" Taking part is paid at {people.currency}{people.pay_per_hour:.2f} an hour, "
            "for the time the tasks are expected to take."
        )
    return DEFAULT_CONSENT.format(
        researcher=people.researcher or "the study team that sent you the link",
        ethics=f" It was approved by {people.ethics_approval}." if people.ethics_approval else "",
        min_age=people.min_age,
        pay=pay,
        contact=(
            f"contact {people.researcher}"
            if people.researcher
            else "ask the study team through the channel where you found this study"
        ),
    )


def consent_paragraphs(text: str) -> list[str]:
    """``text`` as the paragraphs a page shows: split at blank lines, each one line (line by
    line, so that a long run of blank lines costs linear time)."""
    paragraphs: list[list[str]] = [[]]
    for line in text.split("\n"):
        if line.strip():
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    return [" ".join(" ".join(p).split()) for p in paragraphs if p]


def consent_hash(text: str) -> str:
    """What a consent is stored with: the sha256 of the text shown, paragraph by paragraph."""
    return sha256_hex("\n\n".join(consent_paragraphs(text)))


@dataclass(frozen=True)
class AxisGuide:
    """One HEART axis as the judge prompt puts it, with its stronger and weaker example."""

    letter: str
    name: str
    definition: str
    strong: str
    weak: str


_AXIS_LINE = re.compile(r"^(?:- )?([HEART])(?:, | \()([a-z -]+)\)?: (.+)$")
_EXAMPLE_LINE = re.compile(r'^\s+(Strong|Weak): "(.+)"$')
_SEEKER = re.compile(r'for a seeker who wrote "([^"]+)"')


def rubric_axes(version: str) -> tuple[str, list[AxisGuide]]:
    """The five axes of the judge prompt ``version``, in the prompt's own words, and the seeker
    message its examples answer ("" when it has none)."""
    prompt = load_prompt("judge-heart", version)
    seeker = _SEEKER.search(prompt.text)
    found: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in prompt.text.splitlines():
        if axis := _AXIS_LINE.match(line):
            current = found.setdefault(
                axis.group(1), {"name": axis.group(2), "definition": axis.group(3)}
            )
        elif (example := _EXAMPLE_LINE.match(line)) and current is not None:
            current[example.group(1).lower()] = example.group(2)
    missing = [a.value for a in Axis if a.value not in found]
    if missing:
        raise ConfigError(f"the judge prompt {version} does not define the axes {missing}")
    axes = [
        AxisGuide(a.value, found[a.value]["name"], found[a.value]["definition"].rstrip("."),
                  found[a.value].get("strong", ""), found[a.value].get("weak", ""))
        for a in Axis
    ]  # fmt: skip
    return (seeker.group(1) if seeker else ""), axes


@dataclass(frozen=True)
class Example:
    """A worked example: what the seeker said, two replies, the choice and why."""

    seeker: str
    a: str
    b: str
    choice: str  # a key of CHOICES
    why: str

    @property
    def label(self) -> str:
        return CHOICES[self.choice][2]


SCALE_EXAMPLES = (
    Example(
        "I didn't get the job I really wanted. I keep replaying the interview in my head.",
        "That's such a letdown after hoping so much. What part of the interview keeps coming "
        "back to you?",
        "There will be other jobs. Try not to think about it.",
        "A++",
        "A names the disappointment and asks about what the seeker raised; B brushes the "
        "feeling aside and tells them to stop thinking.",
    ),
    Example(
        "My flatmate never cleans up and I'm sick of nagging.",
        "Always being the one who has to ask sounds tiring. Have you two ever agreed who does "
        "what?",
        "That sounds frustrating. Maybe talk to them about it.",
        "A+",
        "Both are kind and suggest talking; A picks up the nagging and offers a more concrete "
        "step, a small edge.",
    ),
    Example(
        "I've felt lonely ever since I moved to a new city.",
        "Moving somewhere new can feel so isolating. What did you enjoy doing back home?",
        "Starting over where you know nobody is hard. How have the evenings been for you?",
        "=",
        "Both take the loneliness seriously and ask a fitting question; neither is clearly better.",
    ),
    Example(
        "My dad's operation is tomorrow and I can't sleep.",
        "I'm sorry, that's a lot of worry to carry tonight.",
        "Of course sleep won't come with his operation so close. Is there someone you could "
        "talk to tonight?",
        "B+",
        "Both are warm; B speaks to this seeker's night and gently offers a next step, a small "
        "edge.",
    ),
    Example(
        "I failed my exam and I feel like an idiot.",
        "I can't help with feelings. Study harder next time.",
        "Failing one exam doesn't make you an idiot, and it sounds like it really stung. What "
        "happened on the day?",
        "B++",
        "A steps out of the supporter's role and lectures; B takes the hurt seriously, "
        "challenges the harsh word and asks.",
    ),
)
"""One short example per choice of the scale, in the order of the scale."""


@dataclass(frozen=True)
class Practice:
    """The practice pair: a conversation, replies A and B, the side careful readers prefer,
    the answer that fits best and why."""

    context: tuple[tuple[str, str], ...]
    replies: tuple[str, str]
    side: str  # Shown.FIRST or Shown.SECOND
    best: str  # a key of CHOICES
    why: str

    def feedback(self, choice: str) -> tuple[bool, str]:
        """Whether ``choice`` picks the preferred reply, and what to tell the participant."""
        picked, _, label = CHOICES[choice]
        best = CHOICES[self.best][2]
        if choice == self.best:
            return True, f"You chose “{label}”, as most careful readers would. {self.why}"
        if picked == self.side:
            return True, (
                f"You chose “{label}”: the right reply, though most careful readers would say "
                f"“{best}”. {self.why}"
            )
        return False, f"You chose “{label}”; most careful readers would say “{best}”. {self.why}"


PRACTICE = Practice(
    context=(
        ("seeker", "I kept putting off calling my grandmother, and now she's in hospital."),
        ("supporter", "Oh no, I'm sorry. How are you feeling about it?"),
        ("seeker", "Guilty. I keep thinking I should have called when she asked me to."),
    ),
    replies=(
        "You shouldn't feel guilty. Everyone is busy, and she probably doesn't remember. Just "
        "focus on your work for now.",
        "That guilt sounds heavy, and it shows how much she matters to you. Would it help to "
        "think about what you'd like to say to her now?",
    ),
    side=Shown.SECOND,
    best="B++",
    why="B names the guilt without judging it and offers a step the seeker can take; A tells "
    "the seeker how to feel and turns away from what they shared.",
)
"""The one practice pair, the same for everyone; its answers are kept apart from the work."""
