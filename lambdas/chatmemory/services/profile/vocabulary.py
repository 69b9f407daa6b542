"""Words the profile's patterns share (traits.py, clauses.py, extract.py), named once, and the
one way a list of words becomes a pattern that finds any of them."""

from __future__ import annotations

import calendar
import re


def any_word(alternatives: str) -> re.Pattern[str]:
    """A pattern that finds any of `alternatives` ("right now|today|this (?:week|year)"), each
    a whole word or phrase, in any case."""
    return re.compile(rf"\b(?:{alternatives})\b", re.I)


# The days and the months by name ("monday|tuesday|...", "january|...|december"), and the
# seasons: alternatives of a pattern, to set in a group.
WEEKDAYS = "|".join(day.lower() for day in calendar.day_name)
MONTHS = "|".join(month.lower() for month in calendar.month_name[1:])
SEASONS = "spring|summer|autumn|fall|winter"
# A day of the week before the "s" or the word that makes it a habit: "on Sundays", "Friday
# nights".
WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
# Someone or something of one's, named in one to three words, the fewest that fit: "my sister",
# "our new puppy", "my wife's mother".
FEW_WORDS = r"(?:[a-z'-]+\s+){0,2}?[a-z'-]+"


# Someone (or a pet) of the user's, one or several: "my sister", "our kids", "my dog". The
# patterns that name a person of theirs share it (clauses.py).
OUR_PEOPLE = (
    r"(?:wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?|sons?|daughters?|kids?|child|"
    r"children|baby|twins|boys?|girls?|mum|mom|mother|dad|father|parents|brothers?|sisters?|"
    r"grandsons?|granddaughters?|grandkids|grandchildren|niece|nephew|aunt|uncle|family|"
    r"friends?|best friend|flatmate|roommate|colleague|boss|dogs?|cats?|puppy|kitten|pets?)"
)


def one_of(words: str) -> str:
    """Alternatives of a pattern from a list of words ("play work teach" -> "play|work|teach");
    each word may be a pattern itself ("sons?")."""
    return "|".join(words.split())


def plain(text: str) -> str:
    """The text with its spaces and apostrophes made plain, without quotes around it."""
    return " ".join(text.replace("\u2019", "'").split()).strip().strip("\"'").strip()


# Work one does, by its common names: "I'm a pharmacist" is who one is (categories.IDENTITY);
# "I'm now a nurse" states the one job a newer one replaces (extract._WORK_AS).
OCCUPATIONS = (
    r"(?:accountant|actor|actress|administrator|analyst|architect|artist|attorney|auditor|"
    r"baker|banker|barber|barista|bartender|builder|butcher|carpenter|cashier|caregiver|carer|"
    r"chef|cook|chemist|cleaner|clerk|coach|consultant|counsel+or|courier|dancer|dentist|"
    r"designer|developer|dietitian|doctor|driver|economist|editor|electrician|engineer|"
    r"farmer|firefighter|gardener|geologist|graphic designer|hairdresser|historian|"
    r"illustrator|instructor|interpreter|janitor|journalist|judge|lawyer|lecturer|librarian|"
    r"lifeguard|locksmith|manager|mechanic|midwife|musician|nanny|nurse|optician|painter|"
    r"paralegal|paramedic|pharmacist|photographer|physician|physicist|physio|"
    r"physiotherapist|pilot|plumber|police officer|policeman|policewoman|postman|"
    r"professor|programmer|psychiatrist|psychologist|receptionist|reporter|researcher|"
    r"salesman|saleswoman|scientist|secretary|singer|social worker|soldier|solicitor|"
    r"statistician|student|surgeon|surveyor|tailor|teacher|teaching assistant|technician|"
    r"therapist|translator|tutor|vet|veterinarian|waiter|waitress|web developer|welder|writer)"
)
# One of them, with a word or two before it: "a nurse", "a retired primary school teacher".
AN_OCCUPATION = rf"an?\s+(?:[a-z-]+\s+){{0,2}}?{OCCUPATIONS}"
# Who one is by country or faith, as a word capitalised like a name: "I'm British" is no name.
NATIONALITIES = (
    r"(?:afghan|african|albanian|algerian|american|argentinian|argentine|armenian|asian|"
    r"australian|austrian|bangladeshi|belgian|bolivian|brazilian|british|bulgarian|burmese|"
    r"cambodian|cameroonian|canadian|caribbean|chilean|chinese|colombian|congolese|"
    r"croatian|cuban|czech|danish|dominican|dutch|ecuadorian|egyptian|english|eritrean|"
    r"estonian|ethiopian|european|filipina|filipino|finnish|french|georgian|german|ghanaian|"
    r"greek|guatemalan|haitian|honduran|hungarian|icelandic|indian|indonesian|iranian|iraqi|"
    r"irish|israeli|italian|jamaican|japanese|jordanian|kenyan|korean|kurdish|latvian|"
    r"latina|latino|lebanese|libyan|lithuanian|malaysian|maltese|mexican|moroccan|nepalese|"
    r"nigerian|norwegian|pakistani|palestinian|persian|peruvian|polish|portuguese|"
    r"puerto rican|romanian|russian|salvadoran|saudi|scottish|senegalese|serbian|slovak|"
    r"slovenian|somali|spanish|sri lankan|sudanese|swedish|swiss|syrian|taiwanese|thai|"
    r"tunisian|turkish|ugandan|ukrainian|uruguayan|venezuelan|vietnamese|welsh|yemeni|"
    r"zimbabwean|christian|muslim|jewish|catholic|protestant|hindu|buddhist|sikh|mormon|"
    r"quaker|atheist|agnostic)"
)
