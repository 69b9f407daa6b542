"""What a statement of the user's is: a lasting fact about them, or a passing remark; one fact
or several; and what kind of fact, so that the profile block keeps what matters first.

No model is needed (the pattern extractor, local mode, tests); a model's extraction goes
through the same checks (extract.parse_facts), so that what it keeps is held to the same rules.
The word lists are general English (states and feelings, places one is at for a while, the
vocabulary of health, family and work), not the phrasing of any data set.

* **Passing remarks** say what the user is doing or feeling right now ("I'm on the train at the
  moment", "I'm feeling sleepy", "I'm making tea", "I'm in a hurry"): a marker of now, the
  progressive of an activity that is not a standing one (living, working, learning... are), a
  state or a feeling, a place one is at for the moment. They stay in the session's transcript
  (episodic memory), never in a lasting record.
* **Reactions** answer the other side ("I love that!", "I agree", "I'm so happy for you"):
  no fact about the user.
* **Clauses** (services/profile/clauses.py): a compound statement is one fact per clause.
* **Categories** (services/profile/categories.py): what kind of fact, for the block's order.
"""

from __future__ import annotations

import re

from chatmemory.services.profile.categories import IDENTITY, health_related
from chatmemory.services.profile.vocabulary import (
    FEW_WORDS,
    MONTHS,
    SEASONS,
    WEEKDAY,
    any_word,
)
from chatmemory.services.profile.vocabulary import plain as _plain

# --- passing remarks ----------------------------------------------------------------------------

# Now, today, tonight: what is said of them is over soon.
_NOW = re.compile(
    r"\b(?:right now|rn|at the moment|at the minute|just now|for now|at present|as we speak|"
    r"today|tonight|this (?:morning|afternoon|evening|week|weekend)|"
    r"for the (?:day|night|evening|afternoon|morning|weekend|week)|"
    r"in (?:a|an|one|two|three|five|ten|fifteen|twenty|thirty|a few|a couple of|\d+)\s*"
    r"(?:minutes?|mins?|secs?|seconds?|hours?|hrs?)|in a (?:bit|sec|second|moment|minute|jiffy)|"
    r"about to|(?:have|has|need|needs|got) to (?:go|leave|run|dash|head off|get going)|gotta go|"
    r"at \d+\s*%(?!\w))(?!\w)",
    re.I,
)
# Who speaks of themselves (a model's extraction may say "the user").
_FIRST = r"(?:i'm|i am|im|we're|we are|the user is|user is)"
_DEGREE = (
    r"(?:(?:so|really|very|a bit|bit|a little|a tad|quite|kind of|kinda|sort of|pretty|super|"
    r"totally|extremely|rather|too|just|still|getting|all|absolutely|feeling|now|half|finally|"
    r"completely|utterly|thoroughly|properly|proper|well|dead|bloody|fully|incredibly|"
    r"seriously|massively|mega|hella|fast|sound|wide|(?:a\s+)?bit\s+of\s+a)\s+)*"
)
# States and feelings that last a moment, not a trait.
_MOMENTARY = frozenset(
    """hungry thirsty starving starved full stuffed tired sleepy exhausted knackered drained
    wiped worn bored busy free available sick ill unwell poorly cold hot warm freezing
    boiling sweaty late early ready done finished back home here there away out off up
    awake stuck lost sorry glad happy sad upset angry annoyed mad cross excited thrilled
    nervous worried stressed scared afraid frightened relieved curious confused sure certain
    unsure fine good great ok okay well alright grateful thankful proud jealous lonely
    hungover drunk tipsy sore dizzy frustrated overwhelmed impressed surprised shocked
    amazed pumped stoked psyched delighted pleased disappointed embarrassed bummed down
    blue grumpy cranky restless calm relaxed chilled comfortable uncomfortable cosy cozy
    wet soaked sunburnt sunburned jetlagged jet-lagged online offline around nearby outside
    inside downstairs upstairs asleep half-asleep dead flat delayed cancelled packed crashing
    frozen slow shattered zonked pooped whacked beat wrecked achy aching fried lovely
    splendid brilliant grand""".split()
)
# Who or what is in that state: the user ("I'm", "I've been", "I got") or something of theirs
# ("My coffee's gone cold", "My phone is dead", "My kids are finally asleep").
_STATE = re.compile(
    rf"^(?:{_FIRST}|i've been|i have been|we've been|i got|i was|"
    rf"(?:my|our|the)\s+{FEW_WORDS}(?:'s|'re|\s+is|\s+are|\s+was|\s+were)"
    r"(?:\s+(?:gone|going|getting|got|still|all|finally|already|just|now|so|really))*)"
    rf"\s+{_DEGREE}(?P<word>[a-z'-]+)\b",
    re.I,
)
# Where someone is, far from the user: "My dad's still up in Leeds", "out in Arizona".
_LIVES_OUT = re.compile(r"\s+(?:in|near)\s+[A-Z]")
_FAR = frozenset({"up", "down", "out", "over"})
# A fear of something is a trait, not a feeling of the moment ("I'm scared of heights").
_PHOBIA = re.compile(r"\b(?:scared|afraid|frightened|terrified|petrified)\s+of\b", re.I)
# What ails one for a day or two: "I've got a headache", "I have a bit of a cold".
_AILMENT = re.compile(
    r"^(?:i|we)(?:\s+have|'ve got|\s+have got|\s+got|'ve)\s+(?:a\s+|an\s+|the\s+)?"
    r"(?:(?:bit of a|slight|bad|terrible|splitting|stinking|mild|killer|horrible|awful|"
    r"nasty|little)\s+)*(?:headache|cold|cough|fever|hangover|sore throat|stomach ?ache|"
    r"tummy ache|toothache|runny nose|blocked nose|cramp|blister|temperature|flu|sniffles|"
    r"jet ?lag|hiccups)\b",
    re.I,
)
# What one needs this minute: "I need a coffee", "I need more sleep".
_NEED_NOW = re.compile(
    r"^(?:i|we)\s+(?:really\s+|so\s+|badly\s+)?(?:need|want|could use|could do with)\s+"
    r"(?:a|an|some|more|another|my)\s+(?:\w+\s+)?(?:coffee|tea|nap|break|drink|snack|rest|"
    r"sleep|shower|minute|moment|breather|walk|beer|wine|lie-in|bite|cuppa)\b",
    re.I,
)
# Counting what one is having: "I'm on my second energy drink", "on my third coffee already".
_ON_NTH = re.compile(
    r"\bon (?:my|our) (?:second|third|fourth|fifth|sixth|\d+(?:st|nd|rd|th)|umpteenth|nth)\s+"
    r"(?:[\w-]+\s+)?(?:coffee|cup|tea|cuppa|drink|beer|glass|pint|can|bottle|espresso|latte|"
    r"coke|red bull|monster|snack|slice|plate|helping|episode|attempt|try)s?\b",
    re.I,
)
# Just done, by the clock: "I just woke up", "I've just had lunch" (a life's event said so is
# lasting: "I just moved to Leeds", "We just adopted a kitten").
_JUST_DONE = re.compile(r"^(?:i|we)(?:'ve|\s+have)?\s+just\s+(?P<verb>[a-z]+)\b", re.I)
_LIFE_EVENT = frozenset(
    """moved started joined adopted bought graduated retired signed quit enrolled switched
    became turned married divorced engaged separated hired promoted lost
    learned learnt passed qualified opened launched sold rented inherited""".split()
)
_GOT_LIFE = re.compile(
    r"\bgot\s+(?:a|an|my|our|two|married|engaged|divorced|promoted|hired|accepted|diagnosed)\b|"
    r"\bhad\s+(?:a|our|my)\s+(?:baby|son|daughter|twins|boy|girl)\b",
    re.I,
)
# "My phone keeps dying", "I keep sneezing": the main clause's subject, then "keep(s) ...ing"
# ("the Ingrid I keep mentioning is my wife" says who Ingrid is).
_KEEPS = re.compile(
    r"^(?:i|we|it|they|he|she|(?:my|our|the)\s+(?:(?!(?:i|we|you|they|he|she)\s)[a-z'-]+\s+)"
    r"{0,2}?(?!(?:i|we|you|they|he|she)\s)[a-z'-]+)\s+"
    r"(?:still\s+|just\s+)?(?:keeps|keep)\s+[a-z]+ing\b",
    re.I,
)
_FEEL = re.compile(
    r"^(?:i|we)(?:\s+feel|'m feeling|\s+am feeling|'ve been feeling|\s+have been feeling)\b", re.I
)
# Where one is for the moment: "I'm on the train", "I'm at the library", "I'm in a meeting".
_WHERE_NOW = frozenset(
    """train bus coach plane flight tube subway metro tram ferry boat car taxi cab uber
    phone call way road move go airport station platform library office gym home bed couch
    sofa shop store supermarket mall market cafe café coffee pub bar restaurant party
    meeting class lecture lesson traffic queue line hurry rush break lunch dinner breakfast
    holiday vacation beach park pool hospital appointment waiting bath shower kitchen
    garden desk computer laptop school work cinema theatre theater concert game match
    airport lobby hotel queue mood pyjamas pajamas pjs hold meetings calls""".split()
)
_PLACE = re.compile(
    rf"^{_FIRST}\s+(?:just\s+|currently\s+|still\s+|now\s+|stuck\s+|sitting\s+|sat\s+|"
    r"standing\s+|stood\s+|lying\s+|waiting\s+|out\s+)?"
    r"(?:at|in|on|on my way to|on the way to|in the middle of|off to|out at|out for|out in|"
    r"between)\s+(?:the|a|an|my|our|this)?\s*(?:(?:good|bad|great|foul|weird|long|short|"
    r"quick|lunch|coffee|tea|first|second|third|fourth|fifth|last|next)\s+)?(?P<place>[a-zé'-]+)",
    re.I,
)
_PROGRESSIVE = re.compile(
    rf"^(?:{_FIRST}|(?:my|our)\s+{FEW_WORDS}(?:'s|'re|\s+is|\s+are))\s+"
    r"(?:just\s+|currently\s+|still\s+|now\s+|busy\s+|being\s+)?(?P<verb>[a-z]+ing)\b",
    re.I,
)
# What one's passion, hobby or job is, a doing named: "My real passion is woodworking".
_NAMES_A_DOING = re.compile(
    r"^(?:my|our)\s+(?:[a-z'-]+\s+){0,2}?(?:passion|hobby|hobbies|job|work|career|thing|"
    r"favourite|favorite|love|dream|goal|weakness|specialty|speciality|profession|field|"
    r"background|interest|obsession|escape|therapy|outlet|side hustle|day job)"
    r"(?:'s|\s+is|\s+are)\b",
    re.I,
)
# Done by habit: "every morning", "usually", "on Sundays", "twice a week".
_HABIT = any_word(
    r"every|each|usually|always|normally|typically|generally|often|never|rarely|"
    r"on (?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends|weekdays)|"
    r"(?:once|twice|\w+ times) a|a (?:day|week|month|year)|per (?:day|week|month)|daily|weekly|"
    r"monthly|yearly|most (?:days|nights|mornings|evenings|weekends)|"
    rf"{WEEKDAY} (?:nights|mornings|evenings|afternoons)|"
    # A span of the week: "off from Friday sundown till Saturday night" (not "from Monday to
    # Friday next week").
    rf"from {WEEKDAY}\b(?![^.!?]*\b(?:next|this|last|coming)\s+week)[^.!?]{{0,40}}?"
    rf"\b(?:till|until|til|to|through)\s+{WEEKDAY}"
)
# A few minutes: "I've got five minutes before my next call", "My bus is ten minutes late".
_FEW = r"(?:a few|a couple of|\d+|one|two|three|five|ten|fifteen|twenty|thirty)"
_MINUTES = re.compile(
    rf"\b(?:(?:got|have|in|only|just)\s+(?:maybe\s+|about\s+|around\s+|like\s+)?{_FEW}\s+"
    r"(?:minutes?|mins?)\b|"
    # A moment free: "I finally have a sec", "Got a spare minute".
    r"(?:got|have)\s+(?:a|one)\s+(?:spare\s+|free\s+|quick\s+)?(?:sec|second|minute|min|"
    r"moment)\b|"
    rf"{_FEW}\s+(?:minutes?|mins?)\s+(?:late|left|before|till|until|ago|to go|to spare|behind)\b)",
    re.I,
)
# A state felt now, said with a degree: "I'm a little distracted", "I'm so stressed".
_FELT = re.compile(
    rf"^{_FIRST}\s+(?:so|really|very|a bit|a little|a tad|kind of|kinda|sort of|pretty|super|"
    r"totally|extremely|quite|too|rather|feeling|getting)\s+(?:\w+\s+)?(?P<word>[a-z]+ed)\b",
    re.I,
)
# Words in -ed that say what one is, not how one feels: "I'm really interested in history".
_LASTING_ED = frozenset(
    """interested married engaged divorced retired qualified employed unemployed
    self-employed based related committed experienced skilled educated trained vaccinated
    allergic organised organized disabled""".split()
)
# A meal, a film, a nap: what was just done ("I ate way too much cake", "Made myself a
# sandwich").
_DONE_NOW = re.compile(
    r"^(?:i|we)\s+(?:just\s+)?(?:ate|drank|watched|slept|woke|cooked|ordered|spilled|spilt|"
    r"burnt|burned|forgot|missed|made myself|baked|grabbed|finished|overslept|napped)\b",
    re.I,
)
# A standing activity said of a place of the moment: "I'm working from a café", "I'm studying in
# the garden" (not "I'm working at the hospital": a job's place).
_FROM_HERE = re.compile(
    r"\b(?:from|in|at|on)\s+(?:the|a|an|my|our|this)\s+(?:local\s+)?(?P<place>café|cafe|coffee|"
    r"pub|bar|train|bus|couch|sofa|bed|garden|park|beach|kitchen|car|plane|balcony|library|"
    r"airport|lobby|hotel|terrace|patio)\b|\bfrom (?:a|the) (?:café|cafe|library|train|pub)\b|"
    r"\brunning (?:a\s+(?:bit|little)\s+)?(?:late|behind)\b",
    re.I,
)
_ABOUT_TO = re.compile(
    rf"^{_FIRST}\s+(?:just\s+)?about to\b|^(?:i|we)\s+(?:just\s+)?got (?:back|home|up|in)\b",
    re.I,
)
# A trip to a place named: a plan ("We're going to Japan"), not a walk to the shop.
_TRIP = re.compile(r"\b(?:going|travell?ing|flying|heading|driving|moving) to [A-Z]")
# Activities that are a standing part of a life when said in the progressive.
# What one is doing that is a way of life even when said of now.
_WAY_OF_LIFE = re.compile(
    rf"\b{_FIRST}\s+(?:currently\s+|now\s+|still\s+)?(?:living|renting|dating|expecting|"
    r"fostering|homeschooling|raising|paying (?:off|back|down)|"
    # A course one is doing: "I'm doing a part-time MSc in marine biology".
    r"doing\s+(?:a|an|my)\s+(?:[\w-]+\s+){0,2}?(?:degree|msc|ma|mba|phd|masters|master's|bsc|"
    r"ba|course|diploma|apprenticeship|doctorate|residency|internship|a-levels|gcses|pgce)|"
    # Learning a language, an instrument, a skill: "Learning Japanese at the moment".
    r"learning\s+(?:to\s+[a-z]+|sign language|piano|guitar|violin|cello|drums|[a-z]+(?:ese|ish|"
    r"ian|ic|an|ch|ew)))\b",
    re.I,
)
_STANDING = frozenset(
    """living working studying learning training teaching raising running attending dating
    seeing volunteering practicing practising preparing prepping saving renting expecting
    recovering moving relocating retiring building coaching caring starting launching
    opening founding developing renovating restoring remodelling remodeling refurbishing
    converting fostering homeschooling""".split()
)
# What one is at for weeks or more: "I'm reading a novel" (not "the news"), "I'm taking a
# pottery class", "I'm having trouble with my business project".
_LONG_RUNNING = re.compile(
    r"\b(?:book|novel|series|trilogy|course|degree|diploma|masters?|phd|program|programme|"
    r"project|business|company|startup|studio|shop|class|classe|lesson|band|team|league|"
    r"club|campaign|charity|career|renovation|thesis|dissertation|article)s?\b|\"[^\"]{3,}\"",
    re.I,
)
# Weighing or preparing something to come: "I'm planning a trip", "I'm thinking about
# starting a project", "We're considering adopting a dog" (not "planning meals").
_PLAN = re.compile(
    r"\b(?:planning|organi[sz]ing|booking|thinking about|thinking of|considering|looking into|"
    r"saving (?:up )?for|hoping|trying)\s+(?:to \w+|\w+ing\b|(?:a|an|the|my|our)\s+(?:\w+\s+)?"
    r"(?:trip|holiday|vacation|wedding|party|move|visit|celebration|reunion|honeymoon|"
    r"birthday|surprise|tour|retreat|adoption))",
    re.I,
)
# A while, not a moment: "I've been feeling low lately".
# Said over a span of time: "since 2019", "for many years now", "ever since I was bitten".
_OVER_TIME = any_word(
    r"since (?:i|we|my|our|\d{4}|forever|childhood|birth|school|uni|university|college|"
    rf"the|last|(?:{MONTHS}))|for (?:many|several|a few|a couple of|\d+|two|three|four|five|six|"
    r"seven|eight|nine|ten|twenty|thirty|forty|fifty) (?:years|decades)|permanently|for life|"
    r"(?:many|several|\d+|two|three|four|five|ten) years now"
)
_LATELY = any_word(
    r"lately|recently|these days|for (?:weeks|months|years|a while|ages)|all (?:year|month)"
)
# Said of a time to come: a plan that lasts until then ("I'm moving to Porto next month").
_FUTURE = any_word(
    rf"next|in (?:the )?(?:{MONTHS}|{SEASONS}|\d{{4}}|a (?:few|couple of) \w+|"
    rf"\d+ (?:days|weeks|months|years))|this (?:{SEASONS}|month|year)|someday|one day|soon"
)


# The weather, the hour, the room: "It's raining here", "It's so late".
# A greeting passed on: "My wife says hi", "Mum sends her love".
_GREETS = re.compile(
    r"\b(?:says?|said)\s+(?:hi|hello|hey|hiya)\b|\bsends?\s+(?:(?:her|his|their|my|our)\s+)?"
    r"(?:love|regards|best|greetings)\b",
    re.I,
)
_AROUND = re.compile(
    r"^(?:(?:it's|it is|its)\s+(?:(?:so|really|very|a bit|quite|pretty|getting|still|just)\s+)*"
    r"(?:raining|snowing|pouring|drizzling|sunny|cloudy|windy|foggy|stormy|hot|cold|freezing|"
    r"warm|humid|chilly|dark|late|early|noisy|quiet|busy|crowded|lovely out|nice out)|"
    # A room or a thing in disarray: "the kitchen is a mess", "my desk's a disaster zone".
    r"(?:the|my|our)\s+(?:[a-z-]+\s+){0,2}?[a-z-]+(?:'s|\s+is|\s+are)\s+(?:still\s+|such\s+|"
    r"an?\s+|complete\s+|total\s+|absolute\s+|bit of a\s+)*(?:mess|tip|disaster|chaos|"
    r"shambles|bombsite|pigsty)\b|"
    r"there's (?:an? |some )?(?:\w+ )?(?:storm|thunderstorm|rain|snow|hail|fog|heatwave|"
    r"power cut|blackout|queue|traffic jam|fire alarm)|the (?:weather|sun|rain|wifi|signal)\b|"
    # How things are going: "Work is crazy", "Things have been hectic", "Life's a lot".
    r"(?:work|life|things|everything|the week|this week|my week|the day|today)(?:'s|\s+is|"
    r"\s+are|\s+has been|\s+have been)\s+(?:(?:so|really|very|a bit|quite|pretty|just|totally|"
    r"absolutely|super)\s+)*(?:crazy|hectic|mad|insane|busy|nuts|manic|full on|a lot|chaotic|"
    r"intense|stressful|rough|tough|a nightmare|brutal|overwhelming)\b)",
    re.I,
)


# Words that open a chat message and say nothing ("honestly", "tbh", "so"): set aside before a
# sentence is read.
OPENER = re.compile(
    r"^(?:(?:honestly|tbh|ngl|lol|haha|so|well|oh|ok|okay|anyway|anyways|btw|fyi|also|brb|afk|now|"
    r"actually|right(?!\s+(?:now|away|here|there))|yeah|yep|hey|hi|ah|um|erm|"
    r"just fyi|and|plus|additionally|besides)\b[,!.:]?\s*)+",
    re.I,
)
# A chat sentence whose "I" goes without saying: "Feeling pretty stressed", "Sitting in the
# library", "Born and raised in Winnipeg", "Big fan of horror films", "Just got back from a jog".
_ELIDED = re.compile(
    r"^(?:(?:just|currently|still|been|now|bit|a bit|kinda|pretty|so|really|[a-z]+ly)\s+)*"
    r"(?:[a-z]+ing\b|born\b|raised\b|based\b|married\b|divorced\b|engaged\b|retired\b|"
    r"allergic\b|(?:a\s+)?(?:big|huge|massive|lifelong|die-hard|total)\s+fan\b|got\b|"
    r"(?P<state>[a-z'-]+)\b)",
    re.I,
)


# Who is the user's without "my": "Mum only speaks Cantonese", "Grandad was a miner".
_KIN = re.compile(
    r"^(?:(?:Mum|Mom|Mam|Dad|Nan|Nana|Gran|Granny|Grandma|Grandad|Grandpa)\b(?!')|"
    # "best mate's name is Ingrid": one's own best friend.
    r"(?i:best\s+(?:mate|friend|pal|buddy|bud)|bestie|hubby|wifey)\b)"
)
# A sentence whose subject is what one does: "Knitting socks is basically my whole
# personality", "Restoring old Vespas is how I unwind"; and "anything", "something"...
_GERUND_SUBJECT = re.compile(
    # (not across a joint: "paying off my loans so every penny is budgeted")
    r"^(?:[a-z]*thing\b|[a-z]+ing\b(?:(?!\s(?:so|and|but|because|while)\s)[^,;:.!?])*?\s"
    r"(?:is|was|are|were|'s|makes?|made|keeps?|"
    r"helps?|gives?|has|have|can|could|will|would|may|might|should|must)\b)",
    re.I,
)
# "T1 diabetic here", "Lifelong Spurs fan over here": who one is, said as where one stands.
_HERE = re.compile(
    r"^(?P<what>(?:[\w'-]+\s+){0,4}?[\w'-]+)\s+(?:over\s+)?here(?P<end>(?:\s+\([^()]+\))?"
    r"(?:[.!]*$|,\s.+$))",
    re.I,
)
# Who one is, named alone: "Native Portuguese speaker.", "Retired schoolteacher", "Die-hard
# Packers fan since I was a kid" (a span after it says how long).
_ONE_NAMED = re.compile(
    r"^(?P<what>(?!(?:a|an|the|my|your|our|his|her|their|this|that|not)\s)(?![a-z]+ing\s)"
    # Words that name one, not a place: "living in Vancouver" is no "Vancouver".
    r"(?:(?!(?:in|at|on|from|to|into|near|with|of)\s)[\w'-]+\s+){0,3}"
    r"(?:[a-z-]+(?:er|or|ist|ian|ant|ent)|fan|buff|nerd|geek|addict|junkie|ex-[a-z]+))"
    r"(?P<end>(?:\s+(?:since|for)\s+[^,;.!?]+)?[.!]*)$",
    re.I,
)
# Done a moment ago, without its "I", said alone: "Just burned my thumb", "just spilt coffee
# everywhere" (not "Just came back from the doctor, he confirmed ...": more follows).
_DID = (
    r"(?:[a-z]+ed|ate|woke|got|made|had|came|went|saw|ran|broke|spilt|burnt|lost|found|took|"
    r"bought|finished|dropped|cut|hit|fell|left|sat|stood|threw|tore|wore|won|drank|slept|did|"
    r"paid|met|caught|forgot|drove|rode|spent|sent|heard|felt|put|told|said|read)"
)
_JUST_DID = re.compile(rf"^just\s+{_DID}\b[^,;]*$", re.I)
# Shift work said without "I work": "Night shifts at the hospital", "Twelve-hour shifts mostly".
_SHIFTS = re.compile(
    r"^(?:(?:night|day|early|late|double|weekend|evening|rotating|split|long|\d{1,2}-hour|"
    r"twelve-hour|ten-hour|eight-hour)\s+)+shifts\b",
    re.I,
)
# Who lives with the user, counted, without "we have": "Three teenagers in this house", "two kids
# under 5 here", "4 cats at home".
_HOUSEHOLD = re.compile(
    r"^(?:\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)\s+(?:[\w'-]+\s+)?(?:kids|"
    r"children|teenagers|teens|boys|girls|sons|daughters|dogs|cats|pets|rabbits|birds|horses)"
    r"\b(?:\s+[\w'-]+){0,3}?\s+(?:here|at home|in (?:this|the|our|my) (?:house|home|flat))\b",
    re.I,
)
_ONE_WHO = re.compile(
    r"\b(?:fan|mum|mom|dad|parent|mother|father|grandma|grandad|grandparent|child|kid|owner|"
    r"lover|person|student|grad|veteran|nurse|teacher|doctor|engineer|developer|carer|"
    r"introvert|extrovert|insomniac|vegan|vegetarian|diabetic|coeliac|celiac|smoker|"
    r"non-smoker|runner|cyclist|gamer|musician|lefty|southpaw|twin|widow|widower|"
    # When one is awake; who one was: "total night owl", "Ex-Marine".
    r"owl|early bird|lark|ex-[a-z]+)s?\b",
    re.I,
)


def _what_one_is(what: str) -> bool:
    return bool(_ONE_WHO.search(what) or health_related(what) or IDENTITY.search(what)) or any(
        w.lower() in _WHAT_ONE_IS for w in what.split()
    )


# What one is for good, said without "I'm": "Vegetarian since I was fourteen", "Lactose
# intolerant, for what it's worth", "Type 1 diabetic".
_WHAT_ONE_IS = frozenset(
    """vegetarian vegan pescatarian diabetic coeliac celiac lactose gluten type deaf blind
    sober teetotal single widowed widower separated pregnant asthmatic epileptic autistic
    dyslexic disabled left-handed right-handed colourblind colorblind terrified petrified
    scared afraid frightened""".split()
)
# What one is not, or not for, said without "I'm": "Not a fan of spicy food", "Definitely not
# a morning person", "Not big on seafood", "Not much of a cook". Not "Not a problem", "Not a
# chance", "Not into it" (a fan of, a kind of person, or something named after "on"/"into").
_NOT_ONE = re.compile(
    r"^(?:(?:definitely|really|just|honestly|totally|certainly|never\s+been|so)\s+)?not\s+"
    r"(?:(?:a|an)\s+(?:(?:big|huge|great|massive)\s+)?(?:fan\s+of\s+\w|[\w-]+\s+person\b)|"
    r"much\s+of\s+an?\s+[\w-]+|(?:big|keen|great)\s+on\s+\w|into\s+(?!it\b|that\b|this\b)\w|"
    # "Not a gamer", "Not a big reader": one who does it (not "Not a number", "Not an answer").
    r"(?:a|an)\s+(?:[a-z-]+\s+){0,2}(?!(?:number|answer|matter|other|water|paper|letter|"
    r"disaster|monster|wonder|bother|deal-?breaker|thriller|banger|winner|joker|killer|border|"
    r"corner|danger|dinner|summer|winter|power|order)\b)[a-z-]+(?:er|ist|ian)[.!]*$)",
    re.I,
)
# "Big fan of jazz", "Huge fan of the Beatles": one of a kind, with no article before it.
_FAN = re.compile(r"^(?:big|huge|massive|lifelong|die-hard|total)\s+fan\s+of\s+\w", re.I)
# A chat sentence that leaves out its "I" before a verb of how one lives: "Been vegetarian since
# 2015", "Can't stand mushrooms", "Never been a fan of jazz", "Work nights at a bakery". The verb
# must be followed by what it says ("Can't complain", "Don't worry" say nothing of the user).
_ELIDED_VERB = re.compile(
    r"^(?P<adverb>(?:never|always|usually|still|also|only|rarely|mostly)\s+)?"
    r"(?P<verb>been|(?:can't|cannot|don't|do not|won't|never)\s+(?:eat|drink|drive|stand|"
    r"own|have|smoke|cook|swim|fly|handle|tolerate|digest|bear|be|been|ride|sleep|touch|use)|"
    r"(?:haven't|havent|have not)\s+(?:eaten|had|drunk|touched|smoked|driven|been|worked)|"
    # "Never learned to drive": what one never did is how one lives.
    rf"never\s+{_DID}|"
    r"live|lived|work|worked|love|hate|adore|enjoy|prefer|speak|play|grew up|moved|used to|"
    r"own|eat|drink|teach|study|studied|run|cycle|swim|volunteer|support|commute|drive|bank|"
    r"carry|attend|rent|smoke|coach|foster|homeschool|am)\b(?P<rest>(?:\s+\S+)+)$",
    re.I,
)


def implied(text: str) -> str:
    """The sentence with the "I" a chat leaves out put back ("Feeling tired" -> "I'm feeling
    tired", "Just got back" -> "I just got back", "Been vegan for years" -> "I've been vegan
    for years"), its opening filler set aside; else as it is."""
    said = OPENER.sub("", _plain(text))
    if _KIN.match(said):
        return f"My {said[0].lower()}{said[1:]}"  # "Mum only speaks Cantonese": the user's mum
    if not said or FIRST_WORD.match(said) or _GERUND_SUBJECT.match(said):
        return said
    with_i = _elided_verb(said)
    if with_i is not None:
        return with_i
    fan = _FAN.match(said)
    if fan or _NOT_ONE.match(said):
        # "Not a fan of spicy food", "Not big on seafood"; "Big fan of jazz" takes its article.
        return f"I'm {'a ' if fan else ''}{said[0].lower()}{said[1:]}"
    if _JUST_DID.match(said):
        return f"I {said[0].lower()}{said[1:]}"  # "Just burned my thumb on the kettle"
    if _SHIFTS.match(said):
        return f"I work {said[0].lower()}{said[1:]}"  # "Night shifts at the hospital"
    if _HOUSEHOLD.match(said):
        return f"We have {said[0].lower()}{said[1:]}"  # "Three teenagers in this house"
    here = _HERE.match(said)
    if here is not None and _what_one_is(here.group("what")):
        what = here.group("what")
        first = what[0].lower() if what[1:2].islower() else what[0]  # "T1 diabetic" stays
        # One of a kind takes an article: "total night owl here" -> "I'm a total night owl".
        kind = _ONE_WHO.search(what)
        counted = kind and kind.end() == len(what) and not re.match(r"^(?:a|an)\s", what, re.I)
        return f"I'm {_article(what) + ' ' if counted else ''}{first}{what[1:]}{here.group('end')}"
    one = _ONE_NAMED.match(said)
    if one is not None and _what_one_is(one.group("what")):
        what = one.group("what")
        return f"I'm {_article(what)} {what[0].lower()}{what[1:]}{one.group('end')}"
    found = _ELIDED.match(said)
    state = found.group("state") if found is not None else None
    if (
        found is not None
        and state is None
        and re.match(r"^(?!really\b|currently\b)\w+ly\s", said, re.I)
    ):
        found = None  # an adverb in -ly before a state only: "Severely claustrophobic"
    if found is None or (
        state is not None
        and state.lower() not in _MOMENTARY | _WHAT_ONE_IS
        and not state.lower().endswith("phobic")  # "Severely claustrophobic"
    ):
        return _after_a_few_words(said)  # a noun, a verb of its own: no "I" left out
    if re.match(r"^(?:just\s+)*got\b", said, re.I):
        return f"I {said[0].lower()}{said[1:]}"
    return f"I'm {said[0].lower()}{said[1:]}"


def _article(what: str) -> str:
    return "an" if what[0].lower() in "aeiou" else "a"


def _after_a_few_words(said: str) -> str:
    """ "Twenty a day, been smoking since I was a teenager": a few words set first, then a
    sentence that leaves out its "I". Words that name what one is are a sentence of their own:
    "Native Tagalog speaker, living in Toronto since 2019" -> "I'm a native Tagalog speaker,
    I'm living in Toronto since 2019" (not a detail of what follows)."""
    head, comma, rest = said.partition(", ")
    if not comma or not rest:
        return said
    if FIRST_WORD.match(rest):
        return said  # "Just came back from the doctor, he confirmed ...": the rest has its own
    own = implied(head)  # head holds no ", ": this does not come back here
    if own != head:
        return f"{own}, {implied(rest)}"
    if len(head.split()) > 4:
        return said
    inner = implied(rest)
    return f"{head}, {inner}" if inner != rest else said


def _elided_verb(said: str) -> str | None:
    """ "Been vegan for years" -> "I've been vegan for years", "Can't stand olives" -> "I can't
    stand olives"; None when the sentence does not open with such a verb."""
    if _TAKEN.match(said) or (_ON_MEDICINE.match(said) and health_related(said)):
        return (
            f"I {said[0].lower()}{said[1:]}"
            if said[:1] in "Tt"
            else f"I'm {said[0].lower()}{said[1:]}"
        )
    verb = _ELIDED_VERB.match(said)
    if verb is None or re.match(r"^\S+\s+(?:is|are|was|were|has|'s)\b", said, re.I):
        return None  # "Work is crazy": a noun
    # A plain verb needs two words after it ("Love it!" is a reaction); a negated one, one.
    if len(verb.group("rest").split()) < (1 if " " in verb.group("verb") else 2):
        return None
    lower = f"{said[0].lower()}{said[1:]}"
    been = verb.group("verb").lower() == "been" and not verb.group("adverb")
    if been or re.match(r"^never\s+been\b", said, re.I):
        return f"I've {lower}"
    return f"I {lower}"


# A medicine one is on or takes, said without "I": "On warfarin.", "Take levothyroxine first
# thing, empty stomach" (a "take" without when it is taken is an instruction: "Take care").
_ON_MEDICINE = re.compile(r"^on\s+(?:[\w-]+\s+){0,2}?[\w-]+[.!]*$", re.I)
_NOT_TAKEN = "care it your a the this that me us them him her five ten turns".split()
_WHEN_TAKEN = (
    "every|each|daily|twice|first thing|once a|at night|in the morning|before bed|with food"
)
_TAKEN = re.compile(
    rf"^take\s+(?!(?:{'|'.join(_NOT_TAKEN)})\b)[\w-]+[^?]*\b(?:{_WHEN_TAKEN})\b", re.I
)


FIRST_WORD = re.compile(
    r"^(?:i|i'm|i've|i'd|i'll|im|me|my|we|we're|we've|our|us|you|your|it|it's|its|there|"
    r"there's|this|that|the|a|an|he|she|they|his|her|their)\b",
    re.I,
)


def passing(text: str) -> bool:
    """A remark about what the user is doing or feeling now, or about what is around them
    now, not a lasting fact."""
    said = implied(text)
    if _ABOUT_TO.match(said) or _AROUND.match(said) or _GREETS.search(said):
        return True
    if _LATELY.search(said) or _HABIT.search(said) or _OVER_TIME.search(said):
        return False  # "Right now I'm living in Tucson, we've been here three years"
    if _WAY_OF_LIFE.search(said):
        return False  # "At the moment I'm living in Hull": where one lives, for now
    if _NOW.search(said):
        return True
    if _MINUTES.search(said):
        return True
    felt = _FELT.match(said)
    if felt and felt.group("word").lower() not in _LASTING_ED and not health_related(said):
        return True
    if _DONE_NOW.match(said) and not health_related(said):
        return True
    if _FEEL.match(said) or _AILMENT.match(said) or _NEED_NOW.match(said) or _ON_NTH.search(said):
        return True
    if _just_done(said) or (_KEEPS.search(said) and not health_related(said)):
        return True
    state = _STATE.match(said)
    if (
        state
        and state.group("word").lower() in _MOMENTARY
        and not _PHOBIA.search(said)
        and not (state.group("word").lower() in _FAR and _LIVES_OUT.match(said, state.end()))
    ):
        return True
    place = _PLACE.match(said)
    if place and place.group("place").lower() in _WHERE_NOW:
        return True
    progressive = _PROGRESSIVE.match(said)
    if progressive is None or _NAMES_A_DOING.match(said):
        return False
    if _FROM_HERE.search(said) and not _LONG_RUNNING.search(said):
        return True
    verb = progressive.group("verb").lower()
    standing = any(w in _STANDING for w in re.findall(r"\b[a-z]+ing\b", said.lower()))
    if verb in _STANDING or standing or _FUTURE.search(said) or _TRIP.search(said):
        return False
    if _LONG_RUNNING.search(said) or _PLAN.search(said):
        return False
    # "I'm planning meals for the week" is an activity of the moment; "I'm going to Spain in
    # May" is a plan (the time to come said).
    return not health_related(said)


def said_to_last(text: str) -> bool:
    """The statement says it lasts: a habit ("every", "on Sundays", "Friday nights"), a while
    ("lately", "for years"), a span ("since 2019")."""
    said = implied(text)
    return bool(
        _HABIT.search(said)
        or _LATELY.search(said)
        or _OVER_TIME.search(said)
        or _OBSERVES.search(said)
    )


# A faith one keeps: who one is, not what one does today.
_OBSERVES = any_word(
    r"shomer (?:shabbat|shabbos)|keep (?:kosher|halal|shabbat|shabbos|the sabbath)|observant|"
    r"devout|(?:i'm|i am|im|we're|we are)\s+(?:a\s+)?(?:practising\s+|practicing\s+)?"
    r"(?:muslim|jewish|christian|catholic|hindu|buddhist|sikh|mormon|orthodox|quaker|jain)"
)


def _just_done(said: str) -> bool:
    """Done a moment ago ("I just woke up"), not a life's event ("I just moved to Leeds")."""
    done = _JUST_DONE.match(said)
    if done is None:
        return False
    if not re.match(r"^\S+(?:'ve|\s+have)", said, re.I) and not re.fullmatch(
        _DID, done.group("verb"), re.I
    ):
        return False  # "just" before a verb of now is "simply": "I just take the bus everywhere"
    verb = done.group("verb").lower()
    lasting = verb in _LIFE_EVENT or _GOT_LIFE.search(said) or _LONG_RUNNING.search(said)
    return not lasting and not health_related(said)


# --- reactions ----------------------------------------------------------------------------------

_REACTION = re.compile(
    r"^(?:i|we)\s+(?:really\s+|totally\s+|completely\s+|just\s+|do\s+|so\s+)?"
    r"(?:think|guess|suppose|know|mean|agree|disagree|see|hope|bet|wish|wonder|believe|"
    r"understand|reckon|doubt|imagine|remember|forgot|promise|admit|appreciate|apologi[sz]e|"
    r"can't wait|cannot wait|can't believe|cannot believe|must say|have to say|"
    r"(?:love|like|hate|adore|enjoy)d? (?:it|that|this|them|those|these|yours?)\b)",
    re.I,
)
_YOU = any_word(r"you|your|you're|yours|u")
# A liking of the other side's: "I love the way you go for it", "I really like your idea".
_LIKING_YOURS = re.compile(
    r"^(?:i|we)\s+(?:really\s+|just\s+|so\s+|totally\s+)?(?:love|like|admire|adore|enjoy|"
    r"appreciate)d?\s+(?:(?:the way|how|what|that|when)\s+(?:you|u)\b|your\b)",
    re.I,
)


# Said of the one spoken to, or to them: "Your support means a lot to me", "You're a great
# friend", "I hope you have a good time", "I'm here for you", "I'll keep you posted".
_TO_YOU = re.compile(
    # (not when it goes on about the user's own: "You mentioned the shelter and I could help")
    r"^(?:you|you're|you've|you'll|you'd|your|yours|ur)\b(?!.*\b(?:i|i'm|i've|my|our)\b)|"
    r"^(?:i|we)\s+(?:really\s+|just\s+|truly\s+|so\s+)?(?:hope|wish)\s+(?:you|your|u)\b|"
    r"^(?:i'm|i am|we're|we are)\s+(?:always\s+|so\s+|really\s+|100%\s+|all\s+)?"
    r"(?:here for|there for|behind|proud of|happy for|glad for|rooting for|"
    r"lucky to have(?:\s+(?:people|friends|someone)\s+like)?)\s+(?:you|u)\b|"
    r"^(?:i'll|i will|we'll|i'm gonna|i am going to)\s+(?:make sure to\s+|definitely\s+|"
    r"be sure to\s+)?(?:keep|let)\s+(?:you|u)\s+(?:updated|posted|know|in the loop)"
    # (not when it says what about: "I'll keep you posted on my travels")
    r"(?:\s+(?:how it goes|how it turns out|what i find|on (?:it|that|this))\b)?[.!]*$",
    re.I,
)


def reaction(text: str, content_words: int) -> bool:
    """A reply to the other side rather than a fact about the user: a mental or discourse verb
    with little after it ("I agree", "I hope so", "I can't wait!"), a liking of "it"/"that",
    a liking of what the other side does or has ("I love the way you ..."), what is said of
    them or to them ("Your support means a lot", "I'll keep you posted"), or a short sentence
    about "you"."""
    said = _plain(text)
    if (_REACTION.match(said) and content_words < 3) or _LIKING_YOURS.match(said):
        return True
    if _TO_YOU.match(said):
        return True
    return bool(_YOU.search(said)) and content_words < 3
