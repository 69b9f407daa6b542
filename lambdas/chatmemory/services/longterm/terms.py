"""The words a message asks about: content words (not function words, not the vocabulary of
small talk) and their stems, shared by auto-recall's gates and its block."""

from __future__ import annotations

import re

from chatmemory.schema import TEXT_STOPWORDS

# Function words plus the words small talk is made of: greeting, thanking, agreeing, reacting,
# apologising, checking the line, leaving. A message made only of these has nothing to recall.
_PHATIC = frozenset(
    """hi hello hey heya hiya howdy yo greetings morning afternoon evening night nite day
    good great fine nice cool awesome amazing wonderful lovely sweet neat perfect excellent
    fantastic brilliant super wow whoa yay woo ok okay k kk alright right sure yes yeah yep yup
    yea ya no nope nah not really indeed exactly totally absolutely definitely certainly agreed
    agree true fair enough course thanks thank thx ty tysm cheers appreciate appreciated
    welcome np problem worries bye goodbye cya later see soon again take care ttyl farewell
    tomorrow
    sorry pardon excuse oops hmm hm hmmm um umm uh uhh er ah ahh oh ooh aha ha haha hahaha
    hehe heh lol lmao rofl xd wait hold on go ahead continue carry keep going more still
    there here back hear listening understand understood get got gotcha noted sounds makes
    sense whatever forget mind nevermind never well anyway anyways so yeah just kind much
    lot lots bit little one thing stuff doing going how's what's whats sup up new today
    tonight weekend you're youre thats that's it's its let's lets please pls plz thank-you
    bot assistant friend buddy mate dude man guys everyone everybody all love happy glad
    interesting funny hilarious crazy wild true sad shame pity tell repeat say said talk
    chat ask asking question answer hope hoping wish well-done done bravo congrats""".split()
)
_COMMON = frozenset(TEXT_STOPWORDS) | _PHATIC
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")


def content_terms(text: str) -> list[str]:
    """The words of `text` that could name something to recall."""
    return [w for w in _WORD.findall(text.lower()) if w not in _COMMON and len(w) > 1]


def term_share(query: str, text: str) -> float:
    wanted = content_stems(query)
    if not wanted:
        return 0.0
    return len(wanted & stems(text)) / len(wanted)


def stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower())}


def content_stems(text: str) -> set[str]:
    """The stems of `text`'s content words (content_terms): what a message asks about, or what
    a record says."""
    return {stem(w) for w in content_terms(text)}


def stem(word: str) -> str:
    return re.sub(r"(?<=\w\w\w)(ing|ed|es|s)$", "", word.strip("'"))
