"""One fact per clause: a compound statement ("I'm allergic to penicillin and my dentist is Dr
Okafor") is one fact per clause; a clause that shares the first one's subject gets it ("My
daughter Maya has a nut allergy and loves chocolate" -> "... Maya loves chocolate"); allergens
listed together are one fact each ("allergic to peanuts and cashews"). "But" keeps a
qualification with what it qualifies ("I eat meat but only chicken") and splits before a clause
with its own subject; what follows a passing state by "so" passes with it. The rest of what a
statement is (passing or lasting, its category) is services/profile/traits.py.
"""

from __future__ import annotations

import re

from chatmemory.services.profile.traits import FIRST_WORD, OPENER, passing, said_to_last
from chatmemory.services.profile.vocabulary import (
    FEW_WORDS,
    NATIONALITIES,
    OUR_PEOPLE,
    WEEKDAY,
    any_word,
    one_of,
)

# Someone of the user's, after "my" or "our", with their name if it is said: "my sister Hannah".
_OURS = rf"{FEW_WORDS}(?:\s+[A-Z][a-z]+)?"
# A thing named with "the", then a verb: "..., the house is from 1920 and ...".
_THE_THING = r"the\s+(?:[a-z-]+\s+){0,2}?[a-z-]+\s+(?:is|are|has|keeps|needs)\b"
# What opens a clause of its own: who, then a verb ("I've", "my wife is", "my dad's").
_CLAUSE = (
    r"(?:i|we)\s+[a-z]|(?:i'm|im|i've|we're|we've|i'd|he's|she's)\b|"
    rf"{_THE_THING}|"
    r"(?:my|our)\s+(?:[a-z-]+'s\s|(?:[a-z'-]+\s+){0,2}?(?:[A-Z][a-z]+\s+)?"
    r"(?:(?:only|also|still|never|always|really|just|usually)\s+)?(?:is|are|was|has|have|"
    r"lives|works|'s|loves|likes|hates|can|can't|[a-z]+(?<![s'])s)\b)"
)
# Verbs of what one does, that a clause goes on with after "and", its "I" left out.
_DOING = one_of(
    """play work teach run swim cycle write sing live study speak cook volunteer coach
    drive ride paint draw read walk go do have own love like hate enjoy prefer support help
    care look train practise practice attend belong dance knit hike climb surf ski eat drink
    sleep keep use wear take make build fix manage lead act collect grow raise foster
    commute travel visit need rent share sell deliver serve"""
)
_AND = re.compile(
    r",?\s+(?:and|plus|\+|&)\s+(?:also\s+|too\s+)?|"
    # A semicolon, with the word that says more follows: "...; additionally, my GP is ...".
    r"\s*;\s+(?:(?:additionally|also|besides|furthermore|moreover|plus|and)\b,?\s+)?|"
    # "but" before who: "I'm from Puerto Rico, but I've lived in Chicago for fifteen years".
    rf",?\s+but\s+(?={_CLAUSE})|"
    # "while", "whereas" or "though" set against who: "I work nights, while my wife works days".
    rf",\s+(?:while|whereas|though|although)\s+(?={_CLAUSE})|"
    # ", where" before who: "I live in Oslo, where I cycle everywhere".
    r",\s+where\s+(?=(?:i|we)\s+[a-z]|(?:i'm|im|i've|we're|we've)\b)|"
    # "so" before who: "I've got high blood pressure so I'm on amlodipine".
    r"\s+so\s+(?=(?:i|we)\s+[a-z]|(?:i'm|im|i've|we're|we've|i'd)\b)|"
    # A comma, or ", so", before a clause of its own: "I'm a teacher, my wife is a nurse".
    rf",\s+(?:so\s+|and so\s+|also\s+)?(?={_CLAUSE})|"
    # A comma before a clause that goes on without its "I": "we live in Cardiff, got a dog
    # called Bo", "I'm 29, work in marketing" (", like ..." is a filler).
    rf",\s+(?!like\s)(?=(?:got|{_DOING})\s+\S+\s+\S)|"
    # Typed on without a comma, "also" says it is another fact: "got a parrot called kiwi shes 30
    # this year i also smoke" (not after a word that joins it: "because I also work nights").
    r"(?<=[\w.!)])(?<!\band)(?<!\bbut)(?<!\bso)(?<!\bas)(?<!\bif)(?<!\bthat)(?<!\bwhen)"
    r"(?<!\bsince)(?<!\bbecause)(?<!\bwhere)(?<!\bwhile)\s+(?=i\s+also\s+[a-z])",
    re.I,
)
_AND_KEPT = re.compile(f"({_AND.pattern})", re.I)
# A verb going on with the first clause's "I": a word, then a preposition or an article and more.
_GOES_ON = re.compile(
    rf"^(?:{_DOING})\s+\S+\s+\S|"
    # ... or says what one does not: "I'm vegan and don't eat honey".
    r"^(?:don't|dont|do not|never|can't|cannot|won't)\s+[a-z]+\s+\S",
    re.I,
)
# "..., got a golden retriever called Bo": what one has.
_GOT = re.compile(r"^got\s+(?:a|an|two|three|four|\d+)\s+\S", re.I)
# Who the first clause is about, for a clause that goes on without saying: "I'm ..." -> "I".
_WHO = re.compile(r"^(?P<who>i|we)(?:'m|'re|'ve|\s)", re.I)
# What one also is, said after "and" with what it is of: "allergic to soy", "lactose intolerant".
_ALSO_IS = one_of(
    """allergic intolerant lactose gluten sensitive addicted deaf blind married engaged
    vegan vegetarian diabetic coeliac celiac asthmatic epileptic pregnant retired
    originally terrified afraid scared"""
)
_IS_ALSO = re.compile(rf"^(?:{_ALSO_IS})\s+\S", re.I)
# Who said "I'm" of the first clause goes on being it: "I'm a nurse and training for a marathon".
_BEING = re.compile(r"^(?P<subject>i'm|i am|we're|we are)\s", re.I)
# What one has, listed: "I have coeliac disease and two dogs" is two facts; "I have three cats,
# Bo and Lu" one (names of what was had).
_HAVING = re.compile(
    r"^(?P<head>(?:i|we)(?:\s+have|'ve got|\s+have got|\s+own|\s+got)\s+)(?P<first>.+)$", re.I
)
_COUNTED = re.compile(r"^(?:a|an|two|three|four|five|six|some|several|\d+)\s+[a-z]", re.I)
# A clause of its own: it names who or what it is about.
_SUBJECT_START = re.compile(
    r"^(?:(?i:i|i'm|i've|i'd|i'll|im|we|we're|we've|my|our|his|her|their)|"
    rf"(?i:{_THE_THING})|"
    r"[A-Z][A-Za-z]+\s+"
    r"(?:is|are|was|has|have|lives|works|loves|likes|hates|plays|can|can't|will|does|doesn't|"
    r"turned))\b"
)
# Someone of the user's and nothing they do: the next of a list ("... with my wife Ana and my
# son Leo"), no clause of its own.
_ONLY_WHO = re.compile(
    r"^(?i:my|our)\s+(?:(?:little|big|older|younger|eldest|youngest|best|two|three)\s+)?"
    rf"(?i:{OUR_PEOPLE})(?:\s+[A-Z][a-z]+)?[.!]*$"
)
# A clause that goes on with the first one's subject, a verb and what follows it: "... and
# loves chocolate" (a single word after "and" is a list: "football and tennis").
_VERB_START = re.compile(
    r"^(?:is|are|was|were|has|have|had|can|can't|cannot|will|won't|does|doesn't|did|didn't|"
    r"used to|[a-z]+(?<!s)s)\s+\S"
)
_OWN_SUBJECT = re.compile(
    rf"^(?P<subject>(?:[Mm]y|[Oo]ur)\s+{_OURS})\s+"
    r"(?:is|are|was|has|have|had|lives|works|loves|likes|hates|plays|can|can't|will|does|"
    r"doesn't|[a-z]+(?<!s)s)\b"
)
_POSSESSIVE = re.compile(r"^(?:his|her|their)\s+", re.I)
_PRONOUN = re.compile(
    r"^(?:he|she)(?:(?P<is>'s)\s+|(?=\s+(?:is|was|has|can|can't|will|does|doesn't|"
    r"[a-z]+(?<!s)s)\b)\s+)",
    re.I,
)
_ALLERGIC = re.compile(r"^(?P<head>.*\ballergic to\s+)(?P<things>.+?)(?P<tail>[.!]?)$", re.I)
# What a list of allergens is not made of: a hedge, an aside, "and everything".
_NOT_A_THING = any_word(
    r"like|properly|really|very|seriously|badly|super|so|everything|anything|stuff|etc|"
    r"epipen|allergic|always|too|please|remember|thanks|thank|note"
)
_LIST = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", re.I)
# A clause that opens with when or where, then who: "... and right now I'm parked outside",
# "... and nowadays I tutor", "... and on Tuesday evenings I play bridge".
_SET_THEN_SUBJECT = re.compile(
    r"^(?:(?:right\s+)?now|nowadays|these days|today|tonight|currently|lately|also|then|"
    rf"at the moment|since [\w']+|(?:week(?:end|day)|evening|morning|night|{WEEKDAY})s|"
    r"(?:on|in|at|every|most|by|after|before)\s+(?:the\s+)?[\w']+"
    r"(?:\s+[\w']+)?)\s*,?\s+(?=(?:i|i'm|im|we|we're|my|our)\b)",
    re.I,
)
_SO = re.compile(r",?\s*(?:and\s+)?so\s*", re.I)
# Who, named before "and I": "My brother Luis and I co-own a shop" has one subject of two people.
_WHO_AND_I = re.compile(r"^(?:my|our)\s+(?:[\w'-]+\s+){0,2}?[\w'-]+$", re.I)


# A clause with a subject of its own that names no one of the user's: "it's aching today",
# "he's had a bad turn this morning", "typing is painful this evening".
_OWN_CLAUSE = re.compile(
    r"^(?:it|he|she|they|that|this|there)(?:'s|'re|\s)|^[a-z]+ing\s+(?:\S+\s+)?(?:is|was|has)\b",
    re.I,
)


# A part that says only how often or when of what the part before it said: "...; we go every
# Sunday morning", "... and I go twice a week". Alone it would say nothing.
_HOW_OFTEN = re.compile(
    r"^(?:i|we|he|she|they)\s+(?:go|goes|went|come|comes|do|does|did)(?:\s+(?:there|too|back))?"
    r"\s+(?:every|each|most|once|twice|three times|on|at|in the)\b[^,;]*$",
    re.I,
)

# What one is allergic to, set apart: "I'm not allergic to peanuts, it's tree nuts I'm allergic
# to" -> "...; I'm allergic to tree nuts".
_CLEFT = re.compile(
    r",\s+(?:it's|it is)\s+(?P<what>(?:[\w'-]+\s+){0,2}?[\w'-]+)\s+(?:that\s+)?(?:i'm|i am)\s+"
    r"allergic\s+to(?P<end>[.!]*)$",
    re.I,
)
# A state that says nothing without what the part before names: "No peanuts for me, I'm
# allergic" (alone, "I'm allergic." loses the allergen).
_OF_THE_PART_BEFORE = re.compile(
    r"^(?:i'm|im|i am|we're|we are)\s+(?:(?:very|severely|really|so|quite|super|badly)\s+)?"
    r"(?:allergic|intolerant|sensitive)(?:\s+to\s+(?:it|them|those|that))?[.!]*$",
    re.I,
)


def clauses(sentence: str) -> list[str]:
    """The facts of one sentence, each a sentence of its own in the user's words."""
    plain = plainly(sentence)
    introduced = _introduction(plain)
    if introduced:
        return introduced
    joined = _parts(plain)
    out: list[str] = []
    for sep, part in joined:
        owner = _OWN_SUBJECT.match(out[0]) if out else None
        if out and _SO.fullmatch(sep) and passing(out[-1]) and not said_to_last(part):
            # What follows from a state of the moment passes with it: "She's napping right now
            # so I finally have a sec".
            out[-1] = f"{out[-1]}{sep}{part}"
        elif out and _SET_THEN_SUBJECT.match(part):
            out.append(part)
        elif out and (_HOW_OFTEN.match(part) or _OF_THE_PART_BEFORE.match(part)):
            # "Biscuit loves the beach; we go every Sunday": where to is the part before.
            out[-1] = f"{out[-1]}{sep}{part}"
        elif owner and (pronoun := _POSSESSIVE.match(part)):
            # "My sister Hannah lives in Melbourne and her birthday's 3 March": whose it is.
            out.append(f"{owner.group('subject')}'s {part[pronoun.end() :]}")
        elif owner and "'s " not in owner.group("subject") and (pronoun := _PRONOUN.match(part)):
            # "My daughter Ines is 6 and she goes to school in Porto": who it is.
            joint = "'s " if pronoun.group("is") else " "  # "... and she's allergic to peanuts"
            out.append(f"{owner.group('subject')}{joint}{part[pronoun.end() :]}")
        elif out and _ONLY_WHO.match(part):
            out[-1] = f"{out[-1]}{sep}{part}"  # "I live with my wife Ana and my son Leo"
        elif not out or _SUBJECT_START.match(part):
            out.append(part)
        elif _VERB_START.match(part) and (subject := _OWN_SUBJECT.match(out[0])):
            out.append(f"{subject.group('subject')} {part}")
        elif (_GOES_ON.match(part) or _GOT.match(part)) and (who := _WHO.match(out[0])):
            out.append(f"{who.group('who')} {part}")  # "I work as a plumber and play in a band"
        elif (re.match(r"^[a-z]+ing\s+\S", part) or _IS_ALSO.match(part)) and (
            being := _BEING.match(out[0])
        ):
            # "I'm a nurse and training for a marathon", "I'm diabetic and allergic to soy"
            out.append(f"{being.group('subject')} {part}")
        elif _COUNTED.match(part) and (having := _HAVING.match(out[-1])):
            out.append(f"{having.group('head')}{part}")
        elif _OWN_CLAUSE.match(part) and passing(part) and not passing(out[-1]):
            # A remark of the moment after a lasting fact is no part of it: "My knee has been
            # replaced twice; it's aching today" (joined, the whole would pass).
            out.append(part)
        else:
            out[-1] = f"{out[-1]}{sep}{part}"  # a list, an object, a phrase: one fact
    facts: list[str] = []
    for clause in out:
        facts += _allergens(clause)
    return [_sentence(c) for c in facts]


# "I'm Kim, 29, software engineer in Berlin": a name, then what one is, each said short.
_INTRODUCED = re.compile(
    rf"^(?P<head>i'm|i am|im)\s+(?!{NATIONALITIES}\b)(?P<name>(?-i:[A-Z][a-z]+)),\s+"
    r"(?P<rest>[^.!?;]+?)[.!]*$",
    re.I,
)
_SAID_AS_IS = re.compile(
    r"^(?:\d{1,3}\b|an?\s|the\s|from\s|in\s|based\s|living\s|working\s|originally\s|"
    r"currently\s|now\s|born\s|raised\s|(?:married|single|divorced|widowed|retired)$)",
    re.I,
)
# A part that opens as a clause does (traits.FIRST_WORD: "I love hiking", "it's ...") but for
# an article ("a nurse from Leeds"), or as words to the one spoken to: not a part of who one is.
_ARTICLE = re.compile(r"^(?:a|an|the)\b", re.I)
_PLEASANTRY = re.compile(
    r"^(?:nice|pleased|good|great|glad|hi|hello|hey|how|what|thanks|thank)\b", re.I
)


def _not_a_part(part: str) -> bool:
    return bool((FIRST_WORD.match(part) and not _ARTICLE.match(part)) or _PLEASANTRY.match(part))


def _introduction(sentence: str) -> list[str]:
    """ "I'm Kim, 29, software engineer in Berlin" -> "I'm Kim.", "I'm 29.", "I'm a software
    engineer in Berlin.": each part a fact of its own, when each is a few words. Else []."""
    found = _INTRODUCED.match(sentence)
    if found is None:
        return []
    rest = re.sub(r"^and\s+", "", found.group("rest"), flags=re.I)
    parts = [p.strip() for p in re.split(r",\s*(?:and\s+)?", rest)]
    if not parts or any(not p or len(p.split()) > 6 or _not_a_part(p) for p in parts):
        return []
    head = found.group("head")
    said = [f"{head} {found.group('name')}."]
    for part in parts:
        if not _SAID_AS_IS.match(part):
            part = f"{'an' if part[0].lower() in 'aeiou' else 'a'} {part}"
        said.append(f"{head} {part}.")
    return said


def _parts(plain: str) -> list[tuple[str, str]]:
    """The parts of a sentence (`plain`: as `plainly` leaves it), each with what joined it to
    the one before ("" for the first)."""
    text = _WHO_RELATIVE.sub(_who_is, _WHO_WITHIN.sub(_who_within, plain))
    text = _CLEFT.sub(r"; I'm allergic to \g<what>\g<end>", text)
    pieces = _AND_KEPT.split(text)  # the parts and, between them, what joined them
    joined = [
        (sep, part.strip()) for sep, part in zip(["", *pieces[1::2]], pieces[0::2], strict=True)
    ]
    # A part may open with its own lead-in, or ask to keep what follows in mind: "... and
    # honestly the thing is I don't drive", "I'm a nurse, and please remember I'm allergic".
    joined = [
        (sep, _LEAD_IN.sub("", _kept(_HEDGE.sub("", part))) if sep else part)
        for sep, part in joined
    ]
    joined = [(sep, part) for sep, part in joined if part]
    parts = [part for _, part in joined]
    if (
        len(parts) > 1
        and joined[1][0].strip() == "and"
        and _WHO_AND_I.match(parts[0])
        and re.match(r"^(?:i|we)\s", parts[1], re.I)
    ):
        joined[:2] = [("", f"{parts[0]} and {parts[1]}")]
    if _aside([part for _, part in joined]):
        joined = joined[1:]  # an aside before what is said: "For what it's worth, I'm ..."
    return joined


_HEDGE = re.compile(r"^(?:honestly|frankly|basically|to be honest)\s+(?=the\s)", re.I)


# What the user says of themselves opens with: "I'm ...", "my son ...", "we ...", "no peanuts
# for me ..." (after a preface and a colon, or a request to keep it in mind).
_THEIR_OWN = (
    r"(?:i|i'm|im|i've|i'd|i'll|my|we|we're|we've|our|no\s+(?:[\w-]+\s+){1,3}?for\s+(?:me|us))\b"
)


def plainly(sentence: str) -> str:
    """The sentence without its opener or lead-in ("Just so you know, ...", "Not sure if it
    matters, but ..."). Asked to keep something ("Can you remember that I'm allergic to
    peanuts?"), what is to be kept, said."""
    return _LEAD_IN.sub("", _kept(_unthanked(OPENER.sub("", sentence.strip()))))


# Thanks to the one spoken to ("Thanks for always being there for me", "Gina, thanks for having
# my back", "..., thanks again!"): said to them, nothing of the user's own. What follows it is
# read alone ("Thanks for asking, we got another cat").
_THANKS = re.compile(
    r"^(?:(?-i:[A-Z][a-z]+),\s+)?(?:thanks|thank you|thank u|thx|many thanks)\b"
    r"(?:\s+(?:so|very)\s+much|\s+a lot|\s+again|\s+a million)?(?:,?\s+(?-i:[A-Z][a-z]+))?"
    r"(?:,?\s+for\b[^,;.!?]*)?(?:[,;:.!]+\s*(?:but\s+)?|\s*$)",
    re.I,
)
# (Not "thanks to": "delays, thanks to the traffic".)
_THANKS_AFTER = re.compile(
    r"\s*[,;]\s*(?:thanks|thank you|thx)\b(?!\s+to\b)[^.!?]*(?=[.!?]*$)", re.I
)
# Who was thanked, left after the thanks: "Thank you for your help, doctor."
_WHO_WAS_THANKED = re.compile(
    r"^(?!.*\b(?:i|i'm|i've|i'll|im|my|we|our)\b)(?:[\w.'-]+\s*){1,3}[.!]*$", re.I
)


def _unthanked(sentence: str) -> str:
    rest = _THANKS.sub("", sentence, count=1)
    if rest != sentence and _WHO_WAS_THANKED.match(rest):
        return ""
    return _THANKS_AFTER.sub("", rest)


def _kept(said: str) -> str:
    """What the user asks to keep in mind, when it is their own, said; else `said`."""
    keep = _KEEP_IN_MIND.match(said)
    if keep is None or not _KEEP_WHAT.match(said, keep.end()):
        return said
    said = said[keep.end() :].rstrip("?").rstrip()
    return said if said.endswith((".", "!")) else f"{said}."


# Asked to keep in mind what follows: "Please remember that ...", "Can you note ...", "Keep in
# mind ...", "Just to let you know ...", "PS ...".
_KEEP_IN_MIND = re.compile(
    r"^(?:(?:can|could|will|would)\s+you\s+)?(?:please\s+|just\s+)?"
    r"(?:remember|note|keep in mind|bear in mind|don't forget|do not forget|never forget|"
    r"to let you know|ps\b|p\.s\.)(?:\s+that)?[:,]?\s+",
    re.I,
)
# ...when what follows is the user's: "I'm ...", "my son ...", "we ...".
_KEEP_WHAT = re.compile(_THEIR_OWN, re.I)


def what_it_is(clause: str, before: str) -> str:
    """A liking of "it" or "them" said after a liking of what they are, with what they are:
    "I hate olives, my wife loves them" -> "My wife loves olives" (alone, "My wife loves them."
    says nothing). `before`: the clause said before it; else `clause` as it is."""
    back = _LIKES_IT.match(clause)
    liked = _LIKED.search(before.rstrip(" .!")) if back else None
    if back is None or liked is None:
        return clause
    return f"{back.group('who')}{back.group('verb')} {liked.group('what')}{back.group('rest')}"


_LIKING = r"(?:love|like|hate|adore|enjoy|prefer|can't stand|cannot stand|don't mind)"
# Who likes "it" or "them": "my husband Tom loves it though", "my kids hate them".
_LIKES_IT = re.compile(
    rf"^(?P<who>(?:my|our)\s+(?:[\w'-]+\s+){{0,3}}?)(?P<verb>{_LIKING}s?|(?:is|are)\s+into)\s+"
    r"(?:it|them)\b(?P<rest>(?:\s+(?:too|though|as well|a lot|even more))*[.!]*)$",
    re.I,
)
# What the clause before likes or does not: "I hate olives", "I'm not a fan of spicy food".
_LIKED = re.compile(
    rf"\b(?:{_LIKING}|fan of|into|big on|keen on)\s+(?P<what>(?!it\b|them\b|that\b)"
    r"(?:[\w'-]+\s+){0,3}[\w'-]+)$",
    re.I,
)


def names_of_ours(fact: str) -> set[str]:
    """The names of the user's people a fact gives: "My daughter Mia is 7" -> {"Mia"}, "We've
    got two kids, Leo who is 10 and Ava who is 6" -> {"Leo", "Ava"}, "a dog called Bo"."""
    names: set[str] = set()
    for who in _OURS_WORD.finditer(fact):
        rest = fact[who.end() :]
        end = _CLAUSE_END.search(rest)
        names |= {n for n in _NAME_AFTER.findall(rest[: end.start() if end else None])}
    return names - _NOT_A_NAME


def named_first(sentence: str, ours: frozenset[str]) -> bool:
    """A statement that opens with the name of one of the user's people: "Leo plays football
    every Saturday", after "my son Leo" (not a question)."""
    first = _NAMED_FIRST.match(sentence)
    return bool(first and first.group("name") in ours and not sentence.rstrip().endswith("?"))


def one_of_ours(sentence: str) -> str:
    """The one person of the user's a sentence names with a name ("... with my sister Nadia" ->
    "my sister Nadia"), or "" (none, or several)."""
    found = {m.group(0) for m in _OURS_NAMED.finditer(sentence)}
    return found.pop() if len(found) == 1 else ""


def said_of(sentence: str, person: str) -> str:
    """ "She's coeliac" said after "my sister Nadia" -> "My sister Nadia's coeliac": who the
    pronoun is, when it can be them (not "he" of a sister); else `sentence` as it is."""
    pronoun = _PRONOUN.match(sentence)
    kin = _OURS_NAMED.match(person)
    if pronoun is None or kin is None or _WAS.match(sentence, pronoun.end()):
        return sentence  # what they were ("She was in a terrible mood") passed
    he = sentence[:2].lower() == "he"
    if kin.group("kin").lower() in (_HERS if he else _HIS):
        return sentence
    joint = "'s " if pronoun.group("is") else " "
    return f"{person[0].upper()}{person[1:]}{joint}{sentence[pronoun.end() :]}"


_WAS = re.compile(r"(?:was|wasn't|did|didn't|had)\b", re.I)
_HERS = frozenset("wife girlfriend sister daughter mum mom mother niece aunt granddaughter".split())
_HIS = frozenset("husband boyfriend brother son dad father nephew uncle grandson".split())
_OURS_NAMED = re.compile(rf"\b(?i:my|our)\s+(?P<kin>(?i:{OUR_PEOPLE}))\s+[A-Z][a-z]+\b")
_OURS_WORD = re.compile(rf"\b{OUR_PEOPLE}\b", re.I)
# A name where the words after a person say who: at once, after a comma, "and", "called".
_NAME_AFTER = re.compile(r"(?:^\s*,?\s*|,\s+|\band\s+|\b(?:called|named)\s+)([A-Z][a-z]+)\b")
_CLAUSE_END = re.compile(r"[.;:!?]|\s(?:but|so|because)\s")
_NOT_A_NAME = frozenset(
    """Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April
    May June July August September October November December The And But""".split()
)
# Not what they said or think ("Sam said the movie was boring"): their words, not them.
_NAMED_FIRST = re.compile(
    r"^(?P<name>[A-Z][a-z]+)(?:'s)?\s+(?!(?:said|says|told|tells|thinks|thought|asked|asks|"
    r"reckons|mentioned|texted|wrote|wants|wanted|keeps saying)\b)[a-z]"
)


def told_after(request: str) -> str:
    """What the user says of themselves after a request and a comma ("Suggest a film for
    tonight, my husband hates horror" -> "my husband hates horror"), or ""."""
    found = _TOLD_AFTER.search(request)
    return request[found.end() :] if found else ""


_TOLD_AFTER = re.compile(rf",\s+(?=(?:{_CLAUSE}))", re.I)


# Someone of the user's after a verb, then what they are or do: "I care for my wife, who has
# MS" -> "I care for my wife; my wife has MS".
_WHO_RELATIVE = re.compile(
    rf"(?<=\s)(?P<who>(?:my|our)\s+{_OURS}),\s+who\s+"
    r"(?=(?:is|are|was|has|have|had|lives|works|can|can't|does|doesn't|[a-z]+(?<!s)s)\b)",
)


def _who_is(found: re.Match[str]) -> str:
    return f"{found.group('who')}; {found.group('who')} "


# Someone of the user's, what they are or do between commas, then what they do: "My grandson
# Tomas, who lives in Valencia, turns ten in April" -> "My grandson Tomas lives in Valencia; my
# grandson Tomas turns ten in April"; the name may have an aside ("My wife Oluwaseun (everyone
# calls her Seun), who's been vegetarian since we met, ...").
_WHO_WITHIN = re.compile(
    rf"^(?P<who>(?:my|our)\s+{_OURS}(?:\s+\([^()]{{1,60}}\))?),\s+(?:who|which)"
    r"(?:\s+|(?=['\u2019]))"
    r"(?P<is>[^,;]+?),\s+(?=(?:is|are|was|has|have|had|lives|works|can|can't|will|does|doesn't|"
    r"[a-z]+(?<!s)s)\s)",
    re.I,
)


def _who_within(found: re.Match[str]) -> str:
    who, what = found.group("who"), found.group("is")
    return f"{who}{'' if what[0] in _APOSTROPHES else ' '}{what}; {who[0].lower()}{who[1:]} "


_APOSTROPHES = "'\u2019"


def _aside(parts: list[str]) -> bool:
    """The first of several parts says nothing of anyone: a few words before a clause that
    names who it is about."""
    if len(parts) < 2:
        return False
    first = parts[0]
    return (
        len(first.split()) <= 5
        and not _OF_THE_PART_BEFORE.match(parts[1])
        and not FIRST_WORD.match(first)
        and not _SUBJECT_START.match(first)
        and bool(_SUBJECT_START.match(parts[1]))
    )


def _allergens(clause: str) -> list[str]:
    """ "I'm allergic to peanuts and cashews" -> one fact per allergen (each a word or three)."""
    found = _ALLERGIC.match(clause.rstrip("."))
    if found is None:
        return [clause]
    # An aside at the end is no allergen ("cats and dogs, lol").
    things = [t.strip() for t in _LIST.split(found.group("things")) if _FILLER.sub("", t).strip()]
    if len(things) < 2 or any(len(t.split()) > 3 or _NOT_A_THING.search(t) for t in things):
        return [clause]  # "peanuts, like properly allergic, EpiPen and everything": one fact
    return [f"{found.group('head')}{thing}" for thing in things]


# Words that say nothing of the fact, set apart by commas or at either end: "For the record,
# ...", "..., to be honest, ...", "... lol".
_FILLER = re.compile(
    r"(?:^|(?<=,)|(?<=\s))\s*(?:for the record|for context|to be honest|honestly|no joke|"
    r"no exaggeration|no kidding|lol|lmao|haha|tbh|tbf|btw|by the way|just so you know|"
    r"for what it's worth|fwiw|i should mention that|i should say that|fun fact|"
    r"in case (?:that's|that is|it's|it is) (?:ever |at all )?(?:relevant|useful|helpful)|"
    r"(?:it's\s+|so\s+)?(?:nice|pleased|good|great|lovely|glad) to (?:meet|e-?meet) you|"
    # "..., I'll keep you posted": said to the one spoken to.
    r"(?:and\s+)?(?:i'll|i will)\s+(?:make sure to\s+|definitely\s+|be sure to\s+)?"
    r"keep you (?:posted|updated|in the loop)|"
    # Asked, after it, to keep it in mind: "I'm allergic to cats, so please remember that".
    r"(?:so\s+|and\s+)?(?:please\s+)?(?:remember|note|keep in mind|bear in mind|don't forget)"
    r"\s+(?:that|this|it)(?:\s+please)?)\s*"
    r"(?:,|(?=[.!?]*$))",
    re.I,
)


_LEAD_IN = re.compile(
    r"^(?:i (?:should|ought to|must|have to|need to|want to) (?:mention|say|add|tell you)"
    r"(?: that)?|just so you know|fun fact:?|"
    # "You know, I love live music", "(I) just wanted to let you know that I'm running again".
    r"you (?:know|see),?(?: that)?(?=\s+(?:i|i'm|i've|my|we|we're|our)\b)|"
    r"(?:i\s+)?(?:just\s+)?(?:wanted|want)\s+to\s+(?:let you know|tell you)(?: that)?"
    r"(?=\s+(?:i|i'm|i've|my|we|we're|our)\b)|"
    # "I don't want to go on about it, but ...", "Doctor says I've got gout".
    r"(?:i\s+)?(?:don't|do not)\s+want\s+to\s+(?:go on|bang on|harp on|moan|complain|"
    r"make a fuss|bore you)(?:\s+about\s+(?:it|this|that))?,?\s+but|"
    r"(?:the\s+|my\s+)?(?:doctor|doc|dr|gp|consultant|specialist)\s+says(?=\s+i)|"
    # "It's been two years now since my Harold passed away": what happened is the fact.
    r"it's been\s+(?:[\w-]+\s+){1,3}?(?:now\s+)?since(?=\s+(?:i|my|we|our)\b)|"
    # "Just a heads up: ...", "(it) turns out (that) ...".
    r"(?:just\s+)?(?:a\s+)?heads up:?|(?:it\s+|so\s+)?turns out(?: that)?|"
    r"for the record|for context|(?:(?:some|quick|a|bit|little|of|for)\s+)*(?:background|context)"
    r"(?:\s+info)?:|"
    r"the (?:main |big |important |only |real )?(?:thing|point|issue|catch) is(?: that)?|"
    # "I'm afraid" before what is so of one's own, a regret and no fear: "I'm afraid my
    # hearing isn't what it was".
    r"(?:i'm|im|i am) afraid(?: that)?(?=\s+(?:my|our)\s)|"
    # A hedge on whether it matters: "Not sure if it matters, but I'm pregnant".
    r"(?:(?:i'm\s+|im\s+)?not sure|no idea|dunno|idk)\s+(?:if|whether)\s+(?:it|this|that)\s+"
    r"(?:matters|is relevant|helps|counts),?(?:\s+but)?|"
    # A few words of preface and a colon before what the user says of themselves: "Quick
    # thing before we start: I'm allergic to peanuts". Not someone's words quoted ("Mum
    # said: I'm too old for this").
    r"(?!(?:[\w'-]+\s+){0,5}?(?:said|says|asked|asks|told|tells|goes|wrote|writes|replied)\b)"
    rf"(?:[\w'-]+\s+){{0,5}}[\w'-]+:(?=\s+{_THEIR_OWN}))"
    r"\s+(?=\S)",
    re.I,
)


def _sentence(clause: str) -> str:
    clause = _LEAD_IN.sub("", _FILLER.sub("", clause).strip()).strip().rstrip(",;")
    clause = re.sub(r"\s*[,;:]?\s*([.!?]*)$", r"\1", clause)  # what a filler left behind
    if not clause:
        return clause
    clause = clause[0].upper() + clause[1:]
    return clause if clause[-1] in ".!?" else f"{clause}."


# --- what it is about ---------------------------------------------------------------------------
