"""What kind of fact a statement is (schema.RecordCategory), so that the profile block keeps what
matters first: health and safety, then identity and people, preferences, the rest; a fact dated
in the past ("last week", "yesterday") is an event, recalled by meaning but not part of the
block, unless it is about health ("I broke my wrist last month" still matters when asked to
carry a sofa). And the subject of the user's own allergy. The word lists are general English
(the vocabulary of health, family and work), not the phrasing of any data set.
"""

from __future__ import annotations

import re

from chatmemory.schema import RecordCategory, RecordType
from chatmemory.services.profile.vocabulary import (
    AN_OCCUPATION,
    NATIONALITIES,
    SEASONS,
    WEEKDAYS,
    any_word,
)
from chatmemory.services.profile.vocabulary import plain as _plain

_HEALTH = any_word(
    r"allerg\w*|anaphyla\w*|epipen|intoleran\w*|coeliac|celiac|gluten|lactose|dairy-free|"
    r"nut-free|peanut-free|asthma\w*|inhaler|diabet\w*|insulin|epilep\w*|seizures?|migraines?|"
    r"arthritis|cancer|chemo\w*|heart (?:condition|disease|problems?|attack)|blood pressure|"
    r"hypertension|blood thinners?|warfarin|statins?|medication|medicines?|meds|prescri\w*|"
    r"pills?|pregnan\w*|breastfeeding|deaf|hard of hearing|hearing aids?|blind|"
    r"short-sighted|long-sighted|near-sighted|far-sighted|visually impaired|glasses|"
    r"contact lens\w*|wheelchair|disabilit\w*|disabled|crutches|injur\w*|fractured?|sprain\w*|"
    r"broke my|broken (?:arm|leg|wrist|ankle|foot|hand|rib|toe|finger)|surgery|operation|"
    r"pacemaker|hay fever|eczema|psoriasis|ibs|crohn'?s|kidney|liver|anxiety|anxious|"
    r"panic attacks?|depress\w*|adhd|autis\w*|dyslexi\w*|ptsd|phobi\w*|afraid of|scared of|"
    r"fear of|terrified of|can't swim|cannot swim|vegan|vegetarian|pescatarian|kosher|halal|"
    r"(?:don't|do not|can't|cannot|never|won't) (?:eat|drink|have)|teetotal|sober|alcohol|"
    r"caffeine|decaf|keto|low-carb|low-sodium|low-salt|sugar-free|diet|smok(?:e[drs]?|ing)|"
    r"sleep apnoea|"
    r"sleep apnea|insomnia|chronic|condition|therap\w*|hiv|covid|immun\w*|vaccin\w*|"
    r"dentures|braces|back pain|bad (?:back|knees?|hips?|shoulders?|ankles?|heart|eyesight)|"
    r"(?:can't|cannot|can not) walk (?:far|long|much|very far)|disorder|syndrome|illness|disease|"
    # An injury: "tore my ACL skiing", "a torn meniscus", "dislocated my shoulder".
    r"tore my|torn(?! between)|acl|ligaments?|meniscus|cartilage|tendon\w*|tendinitis|dislocat\w*|"
    r"concussions?|hernia|slipped disc|sciatica|gout|(?:hip|knee|shoulder|joint|valve)\s+"
    r"(?:replacement|replaced)|(?:hip|knee|shoulder)s?\s+(?:was|were|has been|have been)\s+"
    r"replaced|had my (?:\w+\s+)?(?:hip|knee|shoulder)s?\s+replaced"
)
IDENTITY = any_word(
    r"my name|call me|years old|i'm \d+|i am \d+|born|grew up|i'm from|i am from|"
    r"live[sd]?|living|moved|relocated|my (?:home|house|flat|apartment|place|town|city)|"
    r"work(?:s|ed|ing)?|job|career|profession|employ\w*|retired|unemployed|freelanc\w*|"
    r"self-employed|my boss|colleague|engineer|teacher|nurse|doctor|student|studying|degree|"
    r"university|uni|college|phd|master's|masters|bachelor's|dissertation|thesis|school|"
    r"speak|native|fluent|language|accent|religio\w*|christian|muslim|jewish|"
    r"catholic|protestant|hindu|buddhist|sikh|atheist|church|mosque|synagogue|temple|mass|"
    r"pray\w*|pronouns|married|single|divorced|widowed|engaged|rent|mortgage|floor|"
    r"citizen\w*|nationality|passport|visa|"
    # Who one is by country or faith ("I'm British"), not what one likes of it ("Korean shows"),
    # and by one's work ("I'm a pharmacist").
    rf"(?:i'm|i am|im)\s+(?:half\s+)?{NATIONALITIES}|"
    rf"^(?:i'm|i am|im)\s+(?:now\s+|still\s+)?{AN_OCCUPATION}"
)
_PEOPLE = any_word(
    r"wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?|spouse|sons?|daughters?|kids?|"
    r"child|children|baby|babies|twins|mother|mom|mum|father|dad|parents|brothers?|sisters?|"
    r"siblings?|grandmother|grandma|granny|grandfather|grandpa|grandparents|grand\w+|aunt|"
    r"uncle|cousins?|niece|nephew|family|friends?|roommate|flatmate|housemate|neighbou?rs?|"
    r"dentist|gp|therapist|vet|dogs?|cats?|puppy|kitten|pets?|hamster|rabbit|parrot|horse"
)
_PREFERENCE = any_word(
    r"favou?rite|fan|fans|love|loves|like|likes|enjoy|enjoys|prefer|prefers|hate|hates|"
    r"dislike|dislikes|adore|can't stand|cannot stand|into"
)
_PAST = any_word(
    rf"yesterday|last (?:night|week|weekend|month|year|time|{WEEKDAYS}|{SEASONS})|ago|"
    r"the other day|earlier today|this past"
)
# "... from last year", "since last spring": how long something has been so, not an event.
_SINCE = re.compile(r"\b(?:since|from|as of)\s+(?:the\s+)?$", re.I)
# An event whose result lasts: "We adopted a greyhound last year" says the user has a dog.
_LASTING_EVENT = any_word(
    r"adopted|married|moved|bought|emigrated|retired|graduated|divorced|diagnosed|"
    r"passed away|widowed|"
    r"switched to|converted to|took up|"
    r"got (?:a|an|our|my) (?:dog|cat|puppy|kitten|pet)|had (?:a|our|my) (?:baby|son|daughter|"
    r"twins)"
)
_NAMED = ("residence", "job", "name")
# How old they are: who they are, whenever it was said ("I turned 67 last spring").
_AGE = re.compile(
    r"\b(?:i'm|i am|im|turned|i'll be|i will be)\s+(?:\d{1,3}|(?:twenty|thirty|forty|fifty|"
    r"sixty|seventy|eighty|ninety)(?:-\w+)?|one|two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve|\w+teen)\b|\b\d{1,3} years old\b",
    re.I,
)
# Someone or something with a name of its own: a person or a pet ("a collie called Finn").
_NAMED_BEING = re.compile(r"\b(?:called|named)\s+[A-Z][a-z]+")


def health_related(text: str) -> bool:
    return bool(_HEALTH.search(text))


def category(text: str, record_type: str, subject: str = "") -> RecordCategory:
    """Where a fact or a preference stands in the profile (schema.PROFILE_TIERS)."""
    if health_related(text) or subject.startswith("allergy:"):
        return RecordCategory.HEALTH
    if subject in _NAMED or _AGE.search(text):
        return RecordCategory.IDENTITY
    if subject == "partner":
        return RecordCategory.PEOPLE
    past = _PAST.search(text)
    if past and not _LASTING_EVENT.search(text) and not _SINCE.search(text[: past.start()]):
        return RecordCategory.EVENT
    if record_type == RecordType.PREFERENCE or subject.startswith("likes:"):
        return RecordCategory.PREFERENCE
    if _PEOPLE.search(text) or _NAMED_BEING.search(text):
        return RecordCategory.PEOPLE
    if IDENTITY.search(text):
        return RecordCategory.IDENTITY
    if _PREFERENCE.search(text):
        return RecordCategory.PREFERENCE
    return RecordCategory.OTHER


# "I'm allergic to peanuts", "I have a peanut allergy": one subject per allergen of the user's
# own, so that saying it again supersedes the older record (a correction's rule), and another
# allergen is a fact of its own.
_OWN_ALLERGY = re.compile(
    # "I'm not allergic to peanuts": the same subject, so a correction supersedes.
    r"^(?:i'm|i am|im)\s+(?:not\s+|no\s+longer\s+)?(?:\w+\s+)?allergic to\s+(?:the\s+|a\s+|an\s+)?"
    # An aside after it ("... shellfish though", "... too") is no allergen.
    r"(?P<what>[a-z' -]+?)(?:,?\s+(?:anymore|any more|though|too|as well|also|btw|lol|haha))*"
    r"[.!]?$|"
    r"^i\s+(?:have|'ve got|have got)\s+(?:a|an)\s+(?:\w+\s+)?(?P<kind>[a-z-]+)\s+allergy\b|"
    # "No peanuts for me, I'm allergic": what is left out, then why.
    r"^no\s+(?P<left>[a-z' -]+?)\s+for\s+me,?\s+(?:i'm|i am|im)\s+(?:\w+\s+)?allergic[.!]?$",
    re.I,
)


# "I'm 34", "My son just turned 13", "My daughter Mia is 7": an age, which a newer one
# replaces. Not what will be ("turns 10 in April"), nor a count of something else ("I'm 34
# weeks pregnant").
_AGE = re.compile(
    r"^(?:(?P<me>(?i:i'm|i am|im|i've just turned|i just turned|i turned))|"
    r"(?:(?i:my|our)\s+(?P<kin>[a-z-]+)(?:\s+(?P<name>[A-Z][a-z]+))?|(?P<alone>[A-Z][a-z]+))"
    r"\s+(?i:is|'s|has just turned|just turned|turned))\s+"
    r"(?P<years>\d{1,3}|(?i:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve))"
    r"(?i:\s+(?:years?|yrs?)(?:\s+old)?|\s+yo)?"
    r"(?i:\s+(?:today|yesterday|last\s+\w+|this\s+\w+|on\s+\w+|in\s+\w+))?\s*[.!]*$"
)


def age_subject(text: str) -> str:
    """ "age:me", or "age:<their name>" (else "age:<who they are>", "son") for someone of the
    user's, when `text` says how old they are; else "". (A name alone is someone of the user's
    when the extractor kept the statement: see clauses.named_first.)"""
    found = _AGE.match(_plain(text))
    if found is None:
        return ""
    who = "me" if found.group("me") else found.group("name") or found.group("kin")
    who = who or found.group("alone")  # "Mia turned 8", once Mia is known to be theirs
    return f"age:{who.lower()}"


def allergy_subject(text: str) -> str:
    """ "allergy:<allergen>" for the user's own allergy, else ""."""
    found = _OWN_ALLERGY.match(_plain(text))
    if found is None:
        return ""
    what = (found.group("what") or found.group("kind") or found.group("left") or "").lower().split()
    if not what:
        return ""
    head = what[-1]
    if len(head) > 3 and head.endswith("s") and not head.endswith("ss"):
        head = head[:-1]
    return f"allergy:{head}"
