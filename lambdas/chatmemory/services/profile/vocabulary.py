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
