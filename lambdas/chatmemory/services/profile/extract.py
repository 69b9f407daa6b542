"""Extracting the user's durable facts and preferences from a session, with or without a model.

PatternExtractor (no model: local mode, tests, the offline default) keeps what the user states
about themselves: a sentence in the first person ("I", "my", "we", "our"), not a question, with
enough content to be a fact. A sentence about a liking or a dislike is a preference. Some
sentences name what they are about (where the user lives, their job, their partner, their name;
the thing they like or dislike): the `subject` under which a newer record replaces an older one.
The rest carry no subject and only merge with duplicates.

ModelExtractor asks a text model, one call per chunk of the user's lines (at most 8 chunks, all
at once: one round, as summaries), for one JSON object per line; what does not parse, names a
turn outside its chunk or an unknown type is dropped (tests/unit/recorded holds real answers,
malformed ones included).

Both also keep what the session left unsettled, as records of type open_question (see
`open_questions`): offline, the user's own words for not having decided ("not sure yet",
"haven't decided", "we'll see"...) and questions of the session's last turns that got no
answer, an answer that asks back, or a deferral; with a model, the model names what the user
left undecided (one more sentence of the same prompt, no extra call) and the structural rules
(no answer, asked back, deferred) still apply. A sentence left undecided is never a fact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from chatmemory.domain import Turn
from chatmemory.ports import ExtractedFact
from chatmemory.schema import TEXT_STOPWORDS, Intent, RecordType, TurnOrigin
from chatmemory.services.longterm.lexical import stem
from chatmemory.services.longterm.summarize import (
    ModelWork,
    select_lines,
    split_lines,
)
from chatmemory.services.longterm.terms import content_terms
from chatmemory.services.profile.categories import age_subject, allergy_subject
from chatmemory.services.profile.clauses import (
    clauses,
    named_first,
    names_of_ours,
    one_of_ours,
    plainly,
    said_of,
    told_after,
    what_it_is,
)
from chatmemory.services.profile.lasting import LastingJudge
from chatmemory.services.profile.traits import (
    implied,
    passing,
    reaction,
    said_to_last,
)
from chatmemory.services.profile.vocabulary import AN_OCCUPATION, NATIONALITIES, any_word
from chatmemory.services.prompt import clip_to_tokens

# Sentences, and the clauses a dash sets apart ("Lots happened - I joined a new group").
# Not after a title or an abbreviation: "My GP is Dr. Hallworth", "e.g. cheese".
_SENTENCE = re.compile(
    r"(?<=[.!?])(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)"
    r"(?<!\bJr\.)(?<!\bSr\.)(?<!\bvs\.)(?<!\be\.g\.)(?<!\bi\.e\.)\s+|\n+|\s+[-\u2013\u2014]+\s+"
)
_WORD = re.compile(r"[a-z0-9']+")
# A statement said in wonder, not asked: "turns out im coeliac??".
_WONDERING = re.compile(r"^(?:i'm|im|i am)\s+(?!i\b)(?:[\w-]+\s+){0,2}[\w-]+\?{2,}$", re.I)


def _asked(text: str) -> bool:
    """A question (not a statement said in wonder)."""
    return text.endswith("?") and not _WONDERING.match(text)


_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|im|my|me|we|we're|we've|our|us)\b", re.I)
_QUESTION_START = re.compile(
    r"^(what|who|when|where|why|how|which|do|does|did|is|are|can|could|would|should|will|"
    r"have|has)\b",
    re.I,
)
_STOP = frozenset(TEXT_STOPWORDS) | frozenset(
    "yes yeah oh hey hi hello okay ok really thanks thank got get also just so lol haha wow "
    "im i'm i've i'd i'll we're we've".split()
)
# Liking and disliking: the object is what the preference is about.
_PREFERENCE = re.compile(
    r"\b(?:i|we)\s+(?:really\s+|absolutely\s+|just\s+|don't\s+|do not\s+|can't\s+)?"
    r"(love|like|enjoy|adore|prefer|hate|dislike|detest|stand)s?\s+(?:the\s+|a\s+|an\s+|my\s+)?"
    r"([a-z][a-z'-]+(?:\s+[a-z][a-z'-]+)?)",
    re.I,
)
# A short clause whose one object is "it", "that" or "them".
_OF_IT = re.compile(
    r"^(?:[\w'-]+\s+){1,4}(?:it|that|this|them)(?:\s+(?:too|though|as well|a lot|so much|"
    r"even more|anyway))*[.!]*$",
    re.I,
)
_FAVOURITE = re.compile(r"\bmy\s+favou?rite\s+([a-z]+)\s+(?:is|are)\b", re.I)
_PARTNER = r"(?:wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?)"
# "My name is Zoe", "call me Zo", and "I'm Zoe" (a name capitalised as one, not a country's or a
# faith's: "I'm British", nor how one is: "I'm Back!").
_NAME = (
    r"\bmy name is\b|\bcall me\b|"
    rf"^(?:i'm|i am|im)\s+(?!(?:{NATIONALITIES}|back|busy|done|fine|glad|good|great|here|home|"
    r"new|okay|ready|sorry|sure|tired)\b)(?-i:[A-Z][a-z]+(?:[ -][A-Z][a-z]+)?)[.!]*$"
)
# A job taken up: "I'm now a nurse", "I just started as a chef", "I got a job as a welder". A
# plain "I'm a pharmacist" is who one is (categories.IDENTITY) but no one value: people hold two
# jobs, and only a word of change says the older one ended.
_WORK_AS = (
    rf"^(?:i'm|i am|im)\s+now\s+{AN_OCCUPATION}\b|"
    r"\bi\s+(?:just\s+|recently\s+)?(?:started|began)\s+(?:working\s+|work\s+)?as\s+an?\b|"
    r"\bi\s+(?:just\s+)?got\s+a\s+(?:new\s+)?job\s+as\b"
)


def _by_subject(**patterns: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(subject, its pattern, in any case), in the order given."""
    return tuple((subject, re.compile(pattern, re.I)) for subject, pattern in patterns.items())


# What a statement or an open question is about, by topic ("not sure my job will last" is about
# the job).
_SUBJECTS = _by_subject(
    residence=r"\b(i|we)\s+(now\s+)?(live|lived|am living|are living|moved|have moved|'ve moved|"
    r"relocated|am moving|are moving)\b|\b(i|we)'(m|re) (living|moving)\b",
    job=r"\bi\s+(work|am working|started working)\s+(as|at|for)\b|\bmy (new )?job\b|"
    rf"\bi'm an? [a-z]+ (at|for)\b|{_WORK_AS}",
    partner=rf"\bmy {_PARTNER}\b",
    name=_NAME,
)
# What a fact states the one value of, so that a newer statement of it replaces the older: where
# the user lives now, their work, who their partner is, their name. A fact that only speaks of
# the topic holds beside the others ("My wife is vegetarian" and "My wife and I hike on Sundays"
# are both true; "I lived in Spain as a child" is no move; "I live with my parents" does not say
# where).
_ONE_VALUE = _by_subject(
    residence=r"\b(?:i|we)(?:'m|'re|\s+am|\s+are|'ve|\s+have)?\s+(?:now\s+|currently\s+|just\s+)?"
    r"(?:live|living|moved|moving|relocated|relocating)\s+(?:from\s+[\w' -]{1,30}?\s+)?"
    r"(?:back\s+|over\s+|out\s+)?(?:in|to|into)\b",
    job=r"\bi\s+(?:now\s+)?(?:work|am working|started working)\s+(?:as|at|for)\b|"
    r"\bmy (?:new )?job (?:is )?(?:as|at|with)\b|\bi'm an? [a-z]+ (?:at|for)\b|" + _WORK_AS,
    partner=rf"\bmy {_PARTNER}(?:'s name is|\s+is\s+(?:called|named))\b|"
    r"\b(?:i'm|i am|we're|we are)\s+(?:married|engaged)\s+to\b",
    name=_NAME,
    # "I'm vegetarian", then "I went vegan last month" or "I'm not vegetarian anymore".
    diet=r"^(?:i'm|i am|im|i've been|i have been)\s+(?:now\s+|not\s+|no\s+longer\s+)?"
    r"(?:an?\s+)?(?:strict\s+)?(?:vegetarian|vegan|pescatarian|pescetarian)\b|"
    r"^i\s+(?:just\s+)?(?:went|have gone|'ve gone|turned|became|have become|'ve become)\s+"
    r"(?:vegetarian|vegan|pescatarian|pescetarian)\b",
    # "I smoke about ten a day", then "I quit smoking last month".
    smoking=r"^i\s+(?:(?:still|only|just|now)\s+)?(?:smoke|vape)\b|"
    r"^i(?:'ve|\s+have)?\s+(?:(?:finally|just)\s+)?(?:quit|stopped|gave up|given up)\s+"
    r"(?:smoking|vaping|cigarettes|the cigarettes)\b|"
    r"^i\s+(?:don't|do not|no longer|never)\s+(?:smoke|vape)\b|"
    r"^(?:i'm|i am)\s+(?:now\s+)?(?:a\s+|an\s+)?(?:smoker|non-smoker|ex-smoker|heavy smoker)\b",
    # "I'm teetotal", "I don't drink", "I quit drinking", "I drink socially".
    alcohol=r"^(?:i'm|i am)\s+(?:now\s+)?(?:sober|teetotal|tee-total|a teetotaller)\b|"
    r"^i\s+(?:don't|do not|no longer|never)\s+drink(?:\s+(?:alcohol|anymore|any more|at all|"
    r"much))?[.!]*$|"
    r"^i(?:'ve|\s+have)?\s+(?:quit|stopped|gave up|given up)\s+(?:drinking|alcohol|booze)\b|"
    r"^i\s+(?:only\s+)?drink\s+(?:socially|occasionally|alcohol|wine|beer)\b",
)
MAX_PER_SESSION = 24


def classify(text: str) -> tuple[RecordType, str]:
    """The type and subject of a statement (a record the user states: /remember)."""
    rules = PatternExtractor(min_content_words=1)
    fact = rules._fact(text, 0)
    kind, subject = (
        (RecordType.FACT, held_subject(text)) if fact is None else (fact.type, fact.subject)
    )
    if subject:
        return kind, subject
    # What the statement's clauses are about: "Actually I'm not allergic to shellfish anymore,
    # I outgrew it" is about the shellfish allergy (the record keeps the user's words).
    parts = [rules._fact(c, 0, about=True) for c in clauses(implied(plainly(text)))]
    return kind, next((f.subject for f in parts if f is not None and f.subject), "")


def _subject(text: str) -> str:
    return next((name for name, pattern in _SUBJECTS if pattern.search(text)), "")


def held_subject(text: str) -> str:
    """The subject whose one value `text` states (_ONE_VALUE), else ""."""
    return next((name for name, pattern in _ONE_VALUE if pattern.search(text)), "")


class PatternExtractor:
    """Extractor: first-person statements of the user's turns, a few at most per session."""

    name = "patterns"

    def __init__(
        self,
        max_per_session: int = MAX_PER_SESSION,
        min_content_words: int = 1,
        judge: LastingJudge | None = None,
    ) -> None:
        self.max_per_session = max_per_session
        self.min_content_words = min_content_words
        # What the rules kept, judged again by meaning (services/profile/lasting.py).
        self.judge = judge

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        """The session's facts and preferences, one per clause (clauses.clauses), then what it
        left open (open_questions)."""
        return self.extract_knowing(turns, frozenset())

    def extract_knowing(self, turns: Sequence[Turn], people: frozenset[str]) -> list[ExtractedFact]:
        """As `extract`, knowing the names of the user's people from before (`people`: "Mia",
        whom the profile holds as "My daughter Mia is 7")."""
        found: list[tuple[float, int, ExtractedFact]] = []
        ours = set(people)  # the names of the user's people known so far
        person = ""  # the one of them the message before ended on
        for turn in said(turns):
            for fact in self.statements(turn.input, turn.turn, frozenset(ours), person):
                found.append((len(_content(fact.text)), len(found), fact))
                ours |= names_of_ours(fact.text)
            person = one_of_ours(_sentences(turn.input)[-1]) if turn.input.strip() else ""
        if self.judge is not None:
            # What says it lasts ("every Friday", "since 2019") the rules are sure of.
            doubted = [f for f in found if not said_to_last(f[2].text)]
            passing = self.judge.passing([fact.text for _, _, fact in doubted])
            gone = {f[1] for f, out in zip(doubted, passing, strict=True) if out}
            found = [f for f in found if f[1] not in gone]
        # The most informative statements when a session has many, in their order.
        kept = sorted(found, key=lambda f: (-f[0], f[1]))[: self.max_per_session]
        return [fact for _, _, fact in sorted(kept, key=lambda f: f[1])] + open_questions(turns)

    def statements(
        self, text: str, turn: int = 0, ours: frozenset[str] = frozenset(), person: str = ""
    ) -> list[ExtractedFact]:
        """The facts and preferences the rules find in one message, one per clause. `ours`:
        names of the user's people said before ("my son Leo"), so that "Leo plays football
        every Saturday" is about the user too; `person`: the one the message before ended on
        ("my sister Nadia"), whom "She's coeliac" is about."""
        found: list[ExtractedFact] = []
        for sentence in _sentences(text):
            sentence = said_of(sentence, person)
            person = one_of_ours(sentence)
            if _REQUEST.match(sentence) and not _CALL_ME.match(sentence):
                # "Suggest a film, my husband hates horror": what the choice must fit.
                sentence = told_after(sentence) if _ASKS_TO_CHOOSE.match(sentence) else ""
            # A clause split off is about the user when its sentence is ("... and her
            # birthday's 3 March").
            whole = implied(plainly(sentence))
            about = about_the_user(whole) or named_first(whole, ours)
            for clause in clauses(whole):
                # "..., the house is from 1920": a thing named with "the" is the user's only
                # when its clause says so.
                # A sentence not about the user may still hold a clause that is: "Can't do
                # anything after sunset on Fridays, we keep Shabbat" (not a question's clause).
                own = (
                    None
                    if clause.lower().startswith("the ") or not (about or whole.endswith("?"))
                    else about
                )
                if found:  # "I hate olives. My wife loves them.": what they are
                    clause = what_it_is(clause, found[-1].text)
                fact = self._fact(clause, turn, about=own)
                if fact is not None:
                    found.append(fact)
                    # "We have two kids, Ada and Finn. Finn is allergic to eggs.": theirs.
                    ours = ours | names_of_ours(fact.text)
        return found

    def _fact(self, sentence: str, turn: int, *, about: bool | None = None) -> ExtractedFact | None:
        """The fact `sentence` states, or None; `about`: whether it is about the user, when
        its whole sentence said so (else it is read from `sentence` itself)."""
        text = sentence.strip().strip("\"'").strip()
        if not text:
            return None
        if about is None:
            about = about_the_user(implied(text))
        if not about or _asked(text):
            return None
        text = f"{text.rstrip('?')}." if text.endswith("?") else text
        content = len(_content(text))
        if (
            content < self.min_content_words
            # "Not sure yet where we'll live" is no fact about where they live.
            or undecided(text)
            # "I'm on the train at the moment": episodic memory keeps it, the profile does not.
            or passing(text)
            or reaction(text, content)
            # "My knees hated it.": of something that the record, read alone, does not say.
            or _OF_IT.match(text)
        ):
            return None
        preference = _PREFERENCE.search(text)
        favourite = _FAVOURITE.search(text)
        if preference or favourite:
            thing = favourite.group(1) if favourite else _head(preference.group(2))  # type: ignore[union-attr]
            return ExtractedFact(RecordType.PREFERENCE, text, f"likes:{thing}", turn)
        return ExtractedFact(
            RecordType.FACT,
            text,
            allergy_subject(text) or age_subject(text) or held_subject(text),
            turn,
        )


# Words that open a clause the sentence depends on: a first person after one ("Quick question
# before we start") is not what the sentence says about the user.
_SUBORDINATING = r"before|after|when|whenever|if|unless|until|while|since|because|as soon as|once"
_SUBORDINATE = any_word(_SUBORDINATING)


# A request ("Tell me when I should leave"): the user asks, and says nothing of themselves.
_CALL_ME = re.compile(r"^(?i:(?:you can |just |please )?call me) [A-Z]")
_ASKING = r"^(?:please\s+|can you\s+|could you\s+)?"
_REQUEST = re.compile(
    rf"{_ASKING}(?:tell|give|show|help|let|remind|send|find|list|explain|suggest|recommend|"
    r"write|make|check|book|call|read|translate)\b",
    re.I,
)


# A request for a choice, which what the user says after it may decide.
_ASKS_TO_CHOOSE = re.compile(
    rf"{_ASKING}(?:suggest|recommend|find|give|book|make|help|write|list|show|plan|pick|choose)\b",
    re.I,
)


# A sentence that opens with its subordinate clause or a phrase of time ("Since last year I live
# in Oslo", "When I was twelve, I broke my hip", "After ten years in London, we moved"): the main
# clause follows the comma, or the first person that starts a clause after the opening.
_OPENING = re.compile(
    # "Every morning before work I swim": a time said first, then an opening clause or phrase.
    rf"^(?:(?:every|each|most)\s+[\w']+\s+)?(?:{_SUBORDINATING}|for|ever since)\b[^,]*?"
    r"(?:,\s*|\s+(?=(?:i|i'm|i've|i'd|we|we're|we've|my|our)\s))",
    re.I,
)
# Talk about the talk ("I have a quick question", "I've got a favour to ask", "Enough about
# us"): no fact.
_META = re.compile(
    r"\b(?:i|we)\s+(?:have|'ve got|have got|got)\s+(?:a|one|another|two|some)\s+"
    r"(?:quick\s+|small\s+|little\s+|silly\s+|random\s+)?(?:questions?|query|favou?r|request)\b|"
    r"^(?:\w+,?\s+)?enough (?:about|of) (?:me|us|that|this)\b|"
    # "I was thinking about this the other day": the talk's topic, no fact.
    r"\b(?:i|we)\s+(?:was|were|'ve been|have been)\s+(?:just\s+)?thinking about (?:this|that|it)\b",
    re.I,
)

_ASKED = re.compile(
    r"^\w+\s+(?:do|does|did|is|are|am|can|could|should|will|would|shall|must)\b", re.I
)


def about_the_user(text: str) -> bool:
    """A statement (not a question, not a request) whose main clause speaks of the user: a
    first person before any subordinate clause, or in the main clause after an opening one."""
    if _CALL_ME.match(text):
        return True  # "Call me Mags": what to call them, not a request
    if _asked(text) or _REQUEST.match(text):
        return False
    if _META.search(text):
        return False
    opening = _OPENING.match(text)
    if _ASKED.match(text):  # "When do I leave", "If should I..." asked without its mark
        opening = None
    if opening is not None and opening.end() < len(text):
        main = text[opening.end() :]
        if _FIRST_PERSON.match(main) or (
            _FIRST_PERSON.search(main) and not _SUBORDINATE.search(text, opening.end())
        ):
            return True
    if _QUESTION_START.match(text):
        return False
    first = _FIRST_PERSON.search(text)
    if first is None:
        return False
    subordinate = _SUBORDINATE.search(text)
    return subordinate is None or first.start() < subordinate.start()


def said(turns: Sequence[Turn]) -> list[Turn]:
    """The turns whose input is the user talking: commands (/past, /remember...) are not
    statements, and what /remember stored is a record already."""
    return [t for t in turns if t.input and t.intent == Intent.CHAT]


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text or "") if s.strip()]


def _content(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1]


def _head(phrase: str) -> str:
    """The liked thing's main word: "hiking in the alps" -> "hiking"."""
    words = [w for w in _WORD.findall(phrase.lower()) if w not in _STOP]
    return words[0] if words else phrase.lower()


# --- open questions: what a session left unsettled --------------------------------------------

# The user's own words for something not settled yet (a plan, a choice, a to-do).
_UNDECIDED = any_word(
    r"not (?:yet )?sure (?:yet|whether|if|where|when|what|which|how|who)|"
    r"(?:haven't|have not|hasn't|has not|not) (?:yet )?(?:decided|settled|figured out|chosen|"
    r"picked|booked|made up (?:my|our) minds?)|(?:can't|cannot|couldn't) (?:decide|make up)|"
    r"undecided|still (?:deciding|thinking about|figuring out|need to)|let me think|"
    r"(?:i|we)(?:'ll| will) (?:think about|get back to you|see (?:about|how|if|whether|what))|"
    r"we(?:'ll| will) see(?=\s*(?:[.!,;]|$))|up in the air|tbd|"
    r"to be (?:decided|determined|confirmed)"
)
# The assistant's words for not answering (yet).
_DEFERRED = any_word(
    r"i (?:don't|do not) know|i'm not sure|i am not sure|hard to say|i can't say|"
    r"i cannot say|let me (?:check|think|find out)|(?:i'll|i will) get back to you|we'll see"
)
# Words of deciding, asking and deferring: not what the thread is about.
_THREAD_WORDS = frozenset(
    """sure yet decide decided deciding decision settle settled settling figure figured
    figuring chosen choose picked pick booked made make mind minds undecided still need needs
    have has haven't hasn't can't cannot couldn't let think thinking thought see get back tbd
    determined confirmed whether maybe perhaps wonder wondering know idea ideas suggest
    recommend tell please help want wanna going plan plans planning air don't doesn't didn't
    won't isn't aren't wasn't it's that's what's there's let's we'll you're should could would
    might best better good nice great way ways""".split()
)
# Questions the session's last chat turns leave open; at most this many per session.
OPEN_TAIL_TURNS = 3
MAX_OPEN_PER_SESSION = 3
# Subjects that hold one value at a time (a newer record replaces the older).
_NAMED = frozenset(name for name, _ in _SUBJECTS)


def undecided(text: str) -> bool:
    """The user says they have not settled something ("not sure yet", "haven't decided")."""
    return bool(_UNDECIDED.search(_plain(text)))


def _plain(text: str) -> str:
    return text.replace("\u2019", "'")


def topic_words(text: str) -> list[str]:
    """What a line is about: its content words, stemmed, without the words of deciding and
    asking ("I haven't decided the date of the trip" -> ["date", "trip"])."""
    found = [
        stem(w.strip("'"))
        for w in _WORD.findall(_plain(text).lower())
        if w not in _STOP and w not in _THREAD_WORDS and len(w) > 1
    ]
    return list(dict.fromkeys(w for w in found if w))


def open_subject(text: str, subject: str = "") -> str:
    """The subject of an open question: a named one ("residence", "likes:sushi") when the text
    or the model names one, else `topic:` and up to 4 words of what it is about (the model's
    subject, or the text's): a later statement containing all of them settles it
    (services/profile/profile.py)."""
    subject = subject.strip().lower()
    named = _subject(text) or (subject if subject in _NAMED or subject.startswith("likes:") else "")
    if named:
        return named
    words = topic_words(subject) or topic_words(text)
    return "topic:" + "+".join(sorted(words[:4])) if words else ""


def settles(statement: str, statement_subject: str, question_subject: str) -> bool:
    """A statement answers an open question: they share a named subject, or the statement
    holds every word of the question's topic."""
    if not question_subject:
        return False
    if statement_subject and statement_subject == question_subject:
        return True
    if not question_subject.startswith("topic:"):
        return False
    wanted = set(question_subject.removeprefix("topic:").split("+"))
    return wanted <= set(topic_words(statement))


def open_questions(
    turns: Sequence[Turn],
    *,
    markers: bool = True,
    tail: int = OPEN_TAIL_TURNS,
    limit: int = MAX_OPEN_PER_SESSION,
) -> list[ExtractedFact]:
    """What the session's last `tail` chat turns leave open, the latest `limit` at most. A
    sentence of the user with at least two topic words (topic_words) is open when

    * it says they have not settled it (`markers`; "we'll see about the hotel"), and no later
      line of theirs comes back to it (shares half its topic words: it may have been settled);
    * it is a question (ends with "?") and the answer defers ("I'm not sure", "let me check"),
      and no later line of theirs comes back to it;
    * it is a question that got no answer (the turn stayed pending), or whose answer opens
      by asking back ("Which dates work for you?"), and the user said nothing of content after.

    An answer that is no model's (the offline responder's notes) tells nothing either way."""
    chat = sorted(said(turns), key=lambda t: t.turn)[-tail:] if tail > 0 else []
    by_agent = _agent_answers(turns)
    found: list[ExtractedFact] = []
    for i, turn in enumerate(chat):
        later = [t.input for t in chat[i + 1 :]]
        replied = any(content_terms(line) for line in later)
        later_topics = [set(topic_words(line)) for line in later]
        answer = turn.response if turn.response and turn.response.strip() else None
        answer = None if turn.pending else answer
        if turn.for_agent:
            answer = by_agent.get(turn.turn)
        for sentence in _sentences(turn.input):
            text = sentence.strip().strip("\"'").strip()
            topic = topic_words(text)
            if len(topic) < 2:
                continue
            # A later line of theirs shares half its topic: they came back to it.
            taken_up = any(2 * len(words & set(topic)) >= len(topic) for words in later_topics)
            if markers and undecided(text):
                is_open = not taken_up
            elif not text.endswith("?"):
                is_open = False
            elif answer is None:
                is_open = not replied
            elif not turn.remember_response:
                is_open = False
            elif _DEFERRED.search(_plain(answer)):
                is_open = not taken_up
            else:
                is_open = _sentences(answer)[0].strip().endswith("?") and not replied
            if is_open:
                found.append(
                    ExtractedFact(
                        RecordType.OPEN_QUESTION,
                        text[:MAX_TEXT_CHARS],
                        open_subject(text),
                        turn.turn,
                    )
                )
    return found[-limit:] if limit > 0 else []


def _agent_answers(turns: Sequence[Turn]) -> dict[int, str]:
    """Hand-off to a person: each message stored for the agent and the reply of the agent that
    followed it (a person answers several messages at once, or not at all)."""
    answers: dict[int, str] = {}
    waiting: list[int] = []
    for turn in sorted(turns, key=lambda t: t.turn):
        if turn.for_agent:
            waiting.append(turn.turn)
        elif turn.origin == TurnOrigin.AGENT and turn.response and turn.response.strip():
            answers.update(dict.fromkeys(waiting, turn.response))
            waiting = []
    return answers


EXTRACT_INSTRUCTION = (
    "List the lasting facts and preferences the user states about themselves in these lines: "
    "who they are, health and diet, people, places, work, plans, likes and dislikes, decisions. "
    "Leave out what they are doing or feeling at the moment, small talk and reactions. Write "
    "one JSON object per line, one fact per object (two facts in one sentence are two "
    'objects): {"type": "fact" or "preference", "subject": a short key of what it is about '
    '("residence", "job", "partner", "likes:coffee", "allergy:peanut"; "" if none), "text": '
    'the fact in the user\'s own words, "turn": the number in brackets}. For a plan or choice '
    'the user left undecided, write such an object with "type": "open_question" and a "text" '
    "saying what was not settled. Write nothing else; nothing if there is none."
)
_OBJECT = re.compile(r"\{.*?\}")
MAX_TEXT_CHARS = 300


_PARSED_TYPES = (RecordType.FACT, RecordType.PREFERENCE, RecordType.OPEN_QUESTION)


def parse_facts(answer: str, turns: set[int]) -> list[ExtractedFact]:
    """The facts of a model's answer: JSON objects one per line (prose, code fences and bad
    lines around them are ignored); a turn outside `turns`, an unknown type or an empty text
    drops that line only. An open question's subject is made one a later statement can
    settle (open_subject)."""
    facts: list[ExtractedFact] = []
    for found in _OBJECT.findall(answer):
        try:
            data = json.loads(found)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        kind, text, subject = data.get("type"), data.get("text"), data.get("subject", "")
        turn = data.get("turn")
        if isinstance(turn, str) and turn.strip().isdigit():
            turn = int(turn)
        if (
            kind not in _PARSED_TYPES
            or not isinstance(text, str)
            or not text.strip()
            or not isinstance(turn, int)
            or isinstance(turn, bool)
            or turn not in turns
        ):
            continue
        subject = subject.strip().lower()[:60] if isinstance(subject, str) else ""
        text = text.strip()
        if kind == RecordType.OPEN_QUESTION:
            text = text[:MAX_TEXT_CHARS]
            subject = open_subject(text, subject)
            if not subject:  # nothing it is about: nothing could ever settle it
                continue
            facts.append(ExtractedFact(RecordType(kind), text, subject, turn))
            continue
        # Held to the offline extractor's rules whatever the model did: one fact per record,
        # no passing remark.
        parts = [part[:MAX_TEXT_CHARS] for part in clauses(text[: 2 * MAX_TEXT_CHARS])]
        for part in parts:
            if not passing(part):
                facts.append(
                    ExtractedFact(RecordType(kind), part, subject if len(parts) == 1 else "", turn)
                )
    return facts


class ModelExtractor(ModelWork):
    """Extractor on a TextGenerator: bounded like summaries (at most `max_map_calls` calls,
    all at once); `calls` counts them."""

    kind = "extract"
    default_max_new_tokens = 256

    def extract(self, turns: Sequence[Turn]) -> list[ExtractedFact]:
        lines = [f"[{t.turn}] {t.input}" for t in sorted(said(turns), key=lambda t: t.turn)]
        if not lines:
            return []
        space = max(self._space(EXTRACT_INSTRUCTION) - self.max_new_tokens // 2, 32)
        chunks = split_lines(lines, space)
        if len(chunks) > self.budget.max_map_calls:
            allowed = int(space * self.budget.max_map_calls * 0.9)
            chunks = split_lines(select_lines(lines, allowed), space)[: self.budget.max_map_calls]
        workers = max(1, min(self.budget.concurrency, len(chunks)))
        with ThreadPoolExecutor(workers, thread_name_prefix="extract") as pool:
            answers = list(pool.map(self._call, chunks))
        facts: list[ExtractedFact] = []
        for chunk, answer in zip(chunks, answers, strict=True):
            numbers = {int(n) for n in re.findall(r"^\[(\d+)\]", chunk, re.M)}
            facts += parse_facts(answer, numbers)
        return _with_open_questions(facts, turns)

    def _call(self, chunk: str) -> str:
        prompt = f"{EXTRACT_INSTRUCTION}\n{clip_to_tokens(chunk, 10_000)}\nFacts:"
        return self._generate(prompt, self.max_new_tokens)


def _with_open_questions(found: list[ExtractedFact], turns: Sequence[Turn]) -> list[ExtractedFact]:
    """The model's facts, then the open questions: the model's (what the user left undecided:
    it reads only their lines) and, for turns it named none in, the questions the session's
    end left unanswered, asked back or deferred (open_questions without markers); the latest
    MAX_OPEN_PER_SESSION."""
    facts = [f for f in found if f.type != RecordType.OPEN_QUESTION]
    named = [f for f in found if f.type == RecordType.OPEN_QUESTION]
    covered = {f.turn for f in named}
    structural = [f for f in open_questions(turns, markers=False) if f.turn not in covered]
    both = sorted(named + structural, key=lambda f: f.turn)
    return facts + both[-MAX_OPEN_PER_SESSION:]
