#!/usr/bin/env python3
"""Build a retrieval dev set of long user–assistant chats (the `nightshift-chats` format
read by src/eval/chats.rs).

Why: our hybrid search is tuned on LoCoMo, two friends chatting. A held-out benchmark of
another shape — one user and an assistant over months, hundreds of turns, long assistant
answers that echo the user, a few pasted logs of hundreds of kilobytes — dropped it to
recall@10 0.45. Its questions are about what the USER said, changed, prefers, asked for,
and when, and their evidence is always the user's own turns. This script makes a dev set
of that shape from material it makes itself: no downloads, no network, stdlib only.

    python3 scripts/make_chats_dev.py OUT.json [--seed N] [--chats N] [--small]

OUT may be `-` for stdout. Defaults: seed 7, 12 chats of 150–700 turns, ~370 questions.
--small: 2 chats of ~60 turns with ~10 questions each, for quick checks.
--relative N: also N questions a chat about the time before or after a life event the user
told of ("which podcast was I listening to before I moved house?", kind `relative`). It makes
another set (the rest of the text is drawn after it); without it a seed's set is unchanged.

How a chat is made: a persona gets ~30 personal facts from large pools. The timeline
(sessions of 4–24 turns, 1 or more days apart over 3–6 months) is laid out first; then
each question places its statements in user turns ("in passing", inside a request about
something else half the time), puts distractors on the same topic into other user turns,
and has the assistant echo the statement in its reply and sometimes later, so the right
user turn must beat long assistant turns and look-alike user turns. Only then is every
turn's text written around what was placed in it.

Determinism: one random.Random(seed) drives everything; no clock, set order or environment
is read, so a seed gives byte-identical output for a given Python version (programming
help quotes the standard library's own docstrings and source, which differ by version).
"""

import argparse
import datetime as dt
import importlib
import inspect
import json
import random
import re
import statistics
import sys
import textwrap
import warnings

KIND_SHARES = [("fact", .25), ("update", .15), ("preference", .15), ("instruction", .12),
               ("order", .10), ("temporal", .13), ("multi-session", .10)]

# ---------------------------------------------------------------------------------------
# Pools of values. Each persona draws distinct values from them (see Persona.draw).
# ---------------------------------------------------------------------------------------

FIRST = ("Maya Tomás Priya Jonas Aiko Ruth Kwame Lena Mateo Ines Farid Greta Noor Oskar Yara "
         "Dmitri Sofia Emeka Hana Luca Amara Felix Zainab Pablo Ingrid Ravi Chloe Tariq Elif "
         "Bram Keiko Marcus Leila Anton Rosa Idris Nadia Soren Camila Hugo").split()
PETS = ("Biscuit Pepper Mochi Juniper Waffles Clementine Otis Pickle Nacho Ziggy Marlowe Tofu "
        "Basil Pretzel Luna Rocket Dumpling Maple Olive Gizmo").split()
SURNAMES = "Okafor Lindqvist Moreau Takahashi Brennan Castillo Novak Haddad Whitlock Rossi".split()
CITIES = ["Denver", "Austin", "Rotterdam", "Leeds", "Porto", "Kraków", "Montreal", "Valencia",
          "Melbourne", "Portland", "Glasgow", "Lyon", "Ghent", "Seattle", "Edinburgh", "Bologna",
          "Tucson", "Wellington", "Halifax", "Nantes", "Graz", "Bristol", "Minneapolis",
          "Tallinn", "Utrecht", "Pittsburgh", "Adelaide", "Malmö", "Cork", "Ottawa"]
COUNTRIES = ["Japan", "Portugal", "Peru", "Vietnam", "Norway", "Morocco", "Chile", "Iceland",
             "Greece", "Georgia", "Mexico", "New Zealand", "Slovenia", "Jordan", "Colombia",
             "Sri Lanka", "Croatia", "Kenya", "Argentina", "Taiwan"]
BOOKS = ["The Left Hand of Darkness", "Piranesi", "Klara and the Sun", "The Overstory",
         "Middlemarch", "Pachinko", "The Remains of the Day", "Project Hail Mary",
         "Station Eleven", "Lonesome Dove", "The Dispossessed", "Beloved",
         "A Gentleman in Moscow", "Demon Copperhead", "The Name of the Rose", "Circe"]
BANDS = ["Radiohead", "Khruangbin", "The National", "Fleetwood Mac", "Bon Iver", "Wilco",
         "Arctic Monkeys", "Portishead", "Phoebe Bridgers", "Tame Impala", "Big Thief", "Nils Frahm"]
EMPLOYERS = ["Northwind Logistics", "Halden Biotech", "Brightwater Insurance", "Copperleaf Studios",
             "Meridian Health", "Tessellate Labs", "Oakridge Credit Union", "Bluefin Analytics",
             "Larkspur Publishing", "Ironbridge Engineering", "Saltmarsh Foods", "Quillon Software"]
CARS = ["Honda Civic", "Subaru Outback", "Toyota Prius", "Volkswagen Golf", "Mazda CX-5",
        "Kia Niro", "Ford Focus", "Tesla Model 3", "Skoda Octavia", "Hyundai Kona", "Volvo V60",
        "Nissan Leaf", "Fiat Panda", "Renault Zoe"]
LANGS = ["Portuguese", "Japanese", "German", "Korean", "Italian", "Dutch", "Spanish", "Mandarin",
         "Turkish", "Greek", "Polish", "Swedish"]
PHONES = ["Pixel 7", "iPhone 12 mini", "Galaxy S21", "Fairphone 4", "iPhone 15", "OnePlus 9", "Moto G"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

# Small fillers any template may use (domain word lists take precedence).
COMMON = {
    "n": ["2", "3", "4", "5", "6"], "mins": ["15", "20", "25", "30", "40", "45", "60", "90"],
    "weekday": WEEKDAYS, "month": MONTHS, "money": ["$12", "$15", "$20", "$25", "$40", "$60"],
    "secs": ["30", "45", "60", "90"], "grams": ["120", "150", "180", "200", "250"],
    "weeks": ["2", "3", "4", "6", "8"], "pct": ["5", "10", "15", "20", "25", "30"],
    "hours": ["5.5", "6", "6.5", "7", "7.5", "8"], "name": FIRST,
}

# ---------------------------------------------------------------------------------------
# What a persona says about itself. Every slot has a `key` so a persona never holds two
# slots about the same thing (a fact AND an update about its employer would contradict).
# Templates use {field}s drawn from `pools`; `other` is a distractor about someone else.
# ---------------------------------------------------------------------------------------

def slot(key, domain, pools, say, ask, echo, other=(), **more):
    return dict(key=key, domain=domain, pools=pools, say=say, ask=ask, echo=echo,
                other=list(other), **more)


FACTS = [
    slot("dog", "pets", {"pet": PETS, "breed": ["beagle", "border collie", "greyhound", "dachshund",
         "labrador", "corgi", "whippet", "shiba inu", "vizsla", "cocker spaniel"]},
         ["Things have been hectic since we adopted {pet}, our {breed}, so my evenings are short.",
          "I have to fit everything around walking {pet} — a very stubborn {breed} — twice a day."],
         ["What's the name of my dog?", "What breed is the dog I have?"],
         ["Since {pet} is a {breed}, I'd plan around two proper walks a day.",
          "With a {breed} like {pet} at home, shorter sessions will fit your days better."],
         ["My neighbour's {breed}, {pet}, barks every time the post arrives.",
          "A friend is fostering a {breed} called {pet} and keeps sending me videos."]),
    slot("cat", "pets", {"pet": PETS, "coat": ["ginger", "tabby", "black", "tortoiseshell", "grey"]},
         ["{pet}, our {coat} cat, has claimed my desk chair, so I'm typing this from the sofa."],
         ["What is my cat called?", "What colour is my cat?"],
         ["Give {pet} a cushion of their own by the desk; {coat} cats are famously stubborn about chairs."],
         ["My sister-in-law's {coat} cat, {pet}, is staying with her parents this month."]),
    slot("hometown", "travel", {"city": CITIES},
         ["I grew up in {city}, so anything involving snow or rain doesn't scare me.",
          "Back in {city}, where I was a kid, we did this completely differently."],
         ["Where was I raised?", "Which city am I originally from?"],
         ["Growing up in {city} probably explains a lot of your habits here."],
         ["A colleague of mine grew up in {city} and swears by it."]),
    slot("job", "work", {"job": ["pediatric nurse", "structural engineer", "chemistry teacher",
         "UX researcher", "paralegal", "sound engineer", "veterinary technician", "pharmacist",
         "landscape architect", "physiotherapist", "translator", "museum archivist"]},
         ["As a {job} I'm on my feet most of the day, so I want something low-effort.",
          "My shifts as a {job} are all over the place this month."],
         ["What do I do for a living?", "What is my profession?"],
         ["Working as a {job} is demanding, so I've kept this realistic."],
         ["My friend retrained as a {job} last year and loves it."]),
    slot("employer", "work", {"firm": EMPLOYERS},
         ["The people at {firm}, where I work, are surprisingly relaxed about remote days."],
         ["Which company employs me?", "Where do I work?"],
         ["If {firm} is relaxed about remote days, use them for the focused work."],
         ["A recruiter from {firm} messaged me, though I'm not interested."]),
    slot("partner", "home", {"pname": FIRST, "rel": ["wife", "husband", "partner", "girlfriend", "boyfriend"]},
         ["My {rel} {pname} does most of the cooking, but it's my turn this week.",
          "{pname} (my {rel}) thinks I'm overcomplicating this, as usual."],
         ["What's my partner's name?", "Who am I in a relationship with?"],
         ["If {pname} usually cooks, this is a good week to surprise your {rel}."],
         ["My coworker's {rel}, also called {pname}, just ran a marathon."]),
    slot("child", "home", {"kid": FIRST, "age": ["four", "six", "seven", "nine", "eleven", "thirteen"],
         "kin": ["daughter", "son"]},
         ["My {kin} {kid} just turned {age}, and suddenly wants opinions on everything.",
          "I'm usually juggling this with {kid}, my {age}-year-old {kin}, in the background."],
         ["How old is my kid?", "What is my child's name?"],
         ["At {age}, {kid} can probably help with some of the easier steps."],
         ["Our neighbours' {kin} {kid} is {age} and already better at this than me."]),
    slot("sibling", "home", {"sib": FIRST, "city": CITIES},
         ["My sister {sib}, who lives in {city}, swears this is easy, but she's wrong."],
         ["In which city does my sister live?", "What's my sister's name?"],
         ["If {sib} is in {city}, she might be a useful second opinion."],
         ["My friend's sister {sib} moved to {city} for work."]),
    slot("allergy", "cooking", {"food": ["peanuts", "shellfish", "sesame", "cashews", "kiwi fruit",
         "soy", "mustard", "walnuts"]},
         ["I carry an EpiPen because of {food}, so I check every label twice.",
          "Keep in mind a run-in with {food} sends me to hospital."],
         ["Which food am I allergic to?", "What ingredient is dangerous for me?"],
         ["I've kept {food} out entirely, given how serious your reaction is."],
         ["My colleague can't eat {food}, so our team lunches are a puzzle."]),
    slot("car", "travel", {"car": CARS},
         ["We'll be driving my {car}, so boot space is limited."],
         ["What do I drive?", "What kind of car do I own?"],
         ["A {car} will hold more than you'd think if you pack soft bags."],
         ["My brother-in-law is selling his {car} and keeps asking if I want it."]),
    slot("cuisine", "cooking", {"cuisine": ["Ethiopian", "Sichuan", "Lebanese", "Oaxacan", "Georgian",
         "Keralan", "Peruvian", "Korean", "Basque", "Turkish", "Sicilian"]},
         ["If I could only eat one thing forever it would be {cuisine} food."],
         ["Which cuisine do I love most?", "What's my favourite kind of food?"],
         ["Given how much you love {cuisine} cooking, I've leaned a couple of ideas that way."],
         ["The {cuisine} place near my office closed, which my coworkers mourn more than me."]),
    slot("instrument", "music", {"inst": ["cello", "banjo", "ukulele", "trumpet", "clarinet",
         "bass guitar", "violin", "saxophone", "mandolin"]},
         ["I've been teaching myself the {inst} in the evenings, badly but happily."],
         ["Which instrument am I learning to play?"],
         ["Evenings with the {inst} are a nice counterweight to all this."],
         ["My downstairs neighbour plays the {inst} at 11pm, which is its own problem."]),
    slot("coffee", "health", {"order": ["flat white with oat milk", "double espresso", "cortado",
         "long black", "cardamom latte", "black filter coffee"]},
         ["My day doesn't start until I've had a {order}."],
         ["How do I take my coffee?", "What's my usual coffee order?"],
         ["A {order} is fine, just keep it before noon."],
         ["My coworker drinks a {order} every morning and judges everyone else's order."]),
    slot("degree", "learning", {"subj": ["marine biology", "philosophy", "civil engineering",
         "art history", "economics", "linguistics", "geography"], "uni": ["Leeds", "McGill",
         "UT Austin", "Trinity College Dublin", "Monash", "Utrecht", "UC Davis"]},
         ["I studied {subj} at {uni}, so I'm fine with theory but rusty on practice."],
         ["What did I major in at university?", "Where did I go to university?"],
         ["A {subj} background means the theory part will come easily to you."],
         ["My manager studied {subj} at {uni} and brings it up constantly."]),
    slot("friend", "home", {"fname": FIRST, "fjob": ["nurse", "carpenter", "lawyer", "chef", "pilot", "teacher"]},
         ["My best friend {fname}, a {fjob}, is coming along, so plan for two."],
         ["Who is my closest friend?", "What does my best friend do for work?"],
         ["Having {fname} along helps; a {fjob} will have opinions on this."],
         ["A friend of a friend, {fname}, is a {fjob} and offered advice."]),
    slot("mother", "home", {"city": CITIES},
         ["My mum still lives in {city}, so I fly there a few times a year."],
         ["Where does my mother live?"],
         ["Trips to {city} to see your mum are worth budgeting for separately."],
         ["My partner's mum just moved to {city}."]),
    slot("team_sport", "fitness", {"club": ["Celtic", "the Red Sox", "Feyenoord", "the Packers",
         "Benfica", "the Sounders", "Leeds United", "the Raptors", "Atlético Madrid"]},
         ["I'm a lifelong {club} fan, which explains my mood on Sundays."],
         ["Which sports team do I support?"],
         ["Schedule around {club} matches and you'll stick to it better."],
         ["My barber is obsessed with {club}."]),
    slot("floor", "home", {"fl": ["third", "fourth", "fifth", "sixth"]},
         ["Our flat is on the {fl} floor with no lift, so anything heavy is a project."],
         ["Which floor is my apartment on?"],
         ["Carrying it up to the {fl} floor is the real challenge here."],
         ["A friend lives on the {fl} floor of a building with a broken lift."]),
    slot("author", "learning", {"auth": ["Ursula K. Le Guin", "Kazuo Ishiguro", "Toni Morrison",
         "Terry Pratchett", "Elena Ferrante", "Octavia Butler", "Hilary Mantel", "Ted Chiang"]},
         ["I've read everything {auth} ever published, some of it twice."],
         ["Who is my favourite writer?"],
         ["Anyone who has read all of {auth} will enjoy this kind of structure."],
         ["My book club wants to do {auth} next, and I'm staying quiet."]),
    slot("band", "music", {"band": BANDS},
         ["I've seen {band} live five times and would go again tomorrow."],
         ["Which band have I seen most often in concert?"],
         ["If {band} is your benchmark, you'll like the suggestions at the end."],
         ["My nephew thinks {band} is music for old people."]),
    slot("dayoff", "work", {"day": WEEKDAYS[:5]},
         ["I don't work on {day}s, so that's my admin day."],
         ["Which weekday am I off work?"],
         ["Since {day} is your free weekday, batch the errands there."],
         ["My whole team takes {day}s off in the summer."]),
    slot("injury", "fitness", {"part": ["left knee", "right shoulder", "lower back", "right ankle", "left wrist"]},
         ["I tore something in my {part} skiing two years ago and it still complains."],
         ["What old injury do I have?", "Which part of my body did I hurt years ago?"],
         ["With your {part} history, I've swapped out anything with impact."],
         ["My running buddy is nursing a bad {part} again."]),
    slot("phone", "code", {"phone": PHONES},
         ["I'm still on a {phone}, so the screen is small."],
         ["What phone do I use?"],
         ["On a {phone} you'll want the compact layout."],
         ["My partner just switched to a {phone} and won't stop talking about it."]),
    slot("vet", "pets", {"sur": SURNAMES},
         ["Dr {sur}, our vet, told us to cut treats in half."],
         ["What is our vet's name?"],
         ["Dr {sur}'s advice on treats is sensible; here's how to make it stick."],
         ["A friend switched to a vet called Dr {sur} across town."]),
    slot("landlady", "home", {"lname": FIRST},
         ["Our landlady, {lname}, has to approve anything drilled into the walls."],
         ["Who owns the place I rent?"],
         ["It's worth asking {lname} before you drill anything."],
         ["My colleague's landlady, also called {lname}, is lovely."]),
    slot("hometeam", "work", {"dept": ["payments", "mobile", "data platform", "customer support", "growth"]},
         ["I'm on the {dept} team, so end-of-quarter is brutal."],
         ["Which team at work am I on?"],
         ["End-of-quarter on a {dept} team is rough, so keep it light then."],
         ["The {dept} team next to us has a ping-pong table and no deadlines, apparently."]),
]

UPDATES = [
    slot("city", "travel", {"v": CITIES},
         ["We've been living in {old} for about three years now.",
          "Rent here in {old} keeps climbing, which is partly why I'm asking."],
         ["Which city do I live in now?", "Where am I based these days?"],
         ["Now that you're in {new}, the local options change a bit."],
         ["A colleague of mine just relocated to {v}."],
         change=["Big news: we moved out of {old} last month and we're settled in {new} now.",
                 "Since the move from {old} to {new} I haven't found a decent grocery store yet."],
         again=["Still loving the bakeries in {old}, for what it's worth."]),
    slot("employer", "work", {"v": EMPLOYERS},
         ["I've been at {old} for four years, mostly on internal tooling."],
         ["Which company do I work for currently?", "Who is my employer now?"],
         ["Congratulations on the new role at {new}."],
         ["My friend interviewed at {v} and hated it."],
         change=["I handed in my notice at {old}; this was my first week at {new}."],
         again=["Another reorg at {old} this week, of course."]),
    slot("car", "travel", {"v": CARS},
         ["I drive a {old}, so boot space is limited."],
         ["What car do I have now?", "Which car am I driving these days?"],
         ["The {new} should make longer drives easier."],
         ["My neighbour has a {v} and says it's never broken down."],
         change=["We finally sold the {old} and bought a {new}."],
         again=["The {old} made a new rattling noise this morning."]),
    slot("gym", "fitness", {"v": ["Mondays and Thursdays", "Tuesdays and Fridays", "Wednesdays and Saturdays",
         "Monday, Wednesday and Friday", "weekend mornings"]},
         ["I lift at the gym on {old}."],
         ["Which days do I go to the gym now?", "When do I do my gym sessions at the moment?"],
         ["Training on {new} spreads the recovery nicely."],
         ["My partner goes to the gym on {v}, which never lines up with mine."],
         change=["My schedule changed, so I've moved my gym sessions from {old} to {new}."]),
    slot("manager", "work", {"v": FIRST},
         ["My manager, {old}, wants a written proposal by the end of the month."],
         ["Who is my current boss?", "Who do I report to now?"],
         ["It's worth a one-to-one with {new} early on."],
         ["{v} from the other team was promoted to manager."],
         change=["{old} left the company, and my new manager is {new}."]),
    slot("diet", "cooking", {"v": ["vegetarian", "pescatarian", "vegan", "flexitarian"]},
         ["I've been {old} for a couple of years."],
         ["What diet do I follow now?", "How do I eat these days — any diet?"],
         ["These all fit a {new} diet."],
         ["My brother just went {v} for a month as a challenge."],
         change=["After my last check-up I switched from {old} to {new}."]),
    slot("grocery", "money", {"v": ["$350", "$400", "$450", "$500", "$550", "$600", "$650"]},
         ["Our monthly grocery budget is {old} and we blow it every time."],
         ["How much do we budget for food shopping each month now?"],
         ["With {new} a month for groceries, this plan has some slack."],
         ["A friend feeds a family of five on {v} a month, somehow."],
         change=["We've raised the grocery budget from {old} to {new} a month."]),
    slot("language", "language", {"v": LANGS},
         ["I've been studying {old} for about a year now."],
         ["Which language am I learning at the moment?", "What language am I currently studying?"],
         ["Switching to {new} is a big change, but the habits carry over."],
         ["My colleague is fluent in {v} and offered to practise with me, but I'm not learning it."],
         change=["I've decided to drop {old} and switch to {new}."]),
    slot("race", "fitness", {"v": ["a 10k", "a half marathon", "a trail 25k", "a marathon", "a sprint triathlon"]},
         ["I'm training for {old} in the autumn."],
         ["What event am I training for now?", "Which race is my current goal?"],
         ["Training for {new} changes the long-run distances."],
         ["My running club is mostly doing {v} this year."],
         change=["Change of plan: instead of {old}, I'm now aiming for {new}."]),
    slot("phone", "code", {"v": PHONES},
         ["I'm still on a {old}, so the screen is small."],
         ["Which phone do I have now?"],
         ["On a {new} you'll have more room for the widgets."],
         ["My partner uses a {v} and likes it."],
         change=["My {old} finally died, so I'm on a {new} now."]),
    slot("wake", "health", {"v": ["5:30", "6:00", "6:15", "6:45", "7:00", "7:30"]},
         ["I get up at {old} on weekdays."],
         ["What time do I wake up these days?"],
         ["Getting up at {new} leaves a decent window before work."],
         ["My partner gets up at {v}, which is frankly antisocial."],
         change=["I've started getting up at {new} instead of {old}."]),
    slot("hometeam", "work", {"v": ["payments", "mobile", "data platform", "customer support", "growth"]},
         ["I'm on the {old} team at work."],
         ["Which team am I part of now?"],
         ["Moving to {new} is a good chance to reset your habits."],
         ["The {v} team is hiring, according to the all-hands."],
         change=["I transferred from the {old} team to {new} this month."]),
]

PREFERENCES = [
    slot("recipes", "cooking", {"dislike": ["cilantro", "olives", "blue cheese", "fennel", "capers",
         "anchovies", "beetroot", "coconut", "okra"], "limit": ["20", "25", "30", "35"]},
         ["I really can't stand {dislike}, so please leave it out of anything you suggest.",
          "On weeknights I'll only cook things that take under {limit} minutes start to finish."],
         ["What should you keep in mind when suggesting recipes for me?",
          "What are my constraints for dinner ideas?"],
         ["No {dislike} anywhere in these, as you asked.", "Everything here fits inside {limit} minutes."]),
    slot("travelstyle", "travel", {"seat": ["window", "aisle"], "stay": ["small guesthouses",
         "apartments with a kitchen", "boutique hotels", "hostels with private rooms"]},
         ["I always book a {seat} seat and I avoid overnight flights whenever I can.",
          "I'd much rather stay in {stay} than in big chain hotels."],
         ["What are my preferences when I travel?", "What do I like in flights and places to stay?"],
         ["I've assumed a {seat} seat and daytime flights.", "I've only listed {stay}."]),
    slot("training", "fitness", {"when": ["early morning", "lunchtime", "late evening"],
         "hate": ["burpees", "treadmill running", "spin classes", "rowing machines"]},
         ["I'm much more consistent when I train in the {when}.",
          "Please don't give me {hate}; I dread them and skip the whole session."],
         ["What kind of workouts suit me?", "What should you consider when you build a training plan for me?"],
         ["Everything is scheduled for the {when}.", "No {hate} in this plan."]),
    slot("reading", "learning", {"fmt": ["audiobooks on my commute", "paper books", "e-books on my Kindle"],
         "genre": ["slow literary fiction", "hard science fiction", "narrative non-fiction", "cosy mysteries"]},
         ["I get through most of my reading as {fmt}.", "What I actually enjoy is {genre}; thrillers bore me."],
         ["What should you know before recommending a book to me?", "How and what do I like to read?"],
         ["All of these exist as {fmt}.", "These lean towards {genre}."]),
    slot("money_style", "money", {"tool": ["a plain spreadsheet", "a paper notebook", "cash envelopes"],
         "risk": ["low-cost index funds", "a high-interest savings account", "paying off debt before investing"]},
         ["I track everything in {tool}; budgeting apps stress me out.",
          "I'm cautious with money and prefer {risk} over anything clever."],
         ["How do I like to manage my finances?", "What should you keep in mind when giving me money advice?"],
         ["This works fine in {tool}.", "I've kept it to {risk}."]),
    slot("gardening", "garden", {"method": ["no pesticides at all", "only organic fertiliser", "native plants only"],
         "space": ["containers on the balcony", "raised beds", "a tiny shaded courtyard"]},
         ["I garden with {method}, that's non-negotiable for me.", "Whatever you suggest has to work in {space}."],
         ["What are my gardening principles?", "What should you bear in mind when recommending plants to me?"],
         ["All of this respects {method}.", "These all cope with {space}."]),
    slot("study", "language", {"method": ["spaced-repetition flashcards", "podcasts on walks",
         "short daily writing exercises"], "len": ["fifteen", "twenty", "thirty"]},
         ["I learn best with {method}.", "Realistically I can manage about {len} minutes of study a day."],
         ["How do I prefer to study?", "What study routine suits me best?"],
         ["I've built this around {method}.", "Each block fits in {len} minutes."]),
    slot("decor", "home", {"style": ["warm mid-century pieces", "Japanese-style minimalism",
         "lots of plants and natural wood"], "avoid": ["anything glossy white", "grey walls", "open shelving"]},
         ["My taste at home runs to {style}.", "Please steer me away from {avoid}; I find it cold."],
         ["What kind of interior style do I like?", "What should you keep in mind for decorating ideas for me?"],
         ["I've stuck to {style}.", "Nothing here involves {avoid}."]),
    slot("music_taste", "music", {"genre": ["jazz piano trios", "nineties hip hop", "ambient electronic",
         "bossa nova", "folk with close harmonies"]},
         ["My default soundtrack is {genre}, nothing else really sticks."],
         ["What music do I prefer?"],
         ["If {genre} is your default, these will feel familiar."]),
    slot("holiday", "travel", {"kind": ["cool, rainy places", "hiking trips rather than beaches",
         "cities with good museums"]},
         ["For holidays I always gravitate to {kind}."],
         ["What kind of holidays do I like?"],
         ["Since you like {kind}, I've skipped the resort options."]),
    slot("meetings", "work", {"rule": ["mornings kept free of meetings", "written updates instead of calls",
         "meetings capped at thirty minutes"]},
         ["At work I'm happiest with {rule}; I get nothing done otherwise."],
         ["How do I like my work days organised?"],
         ["Keeping {rule} is worth defending in this proposal."]),
]

INSTRUCTIONS = [
    slot("units", "cooking", {},
         ["From now on, please always give me measurements in metric: grams, litres, Celsius."],
         ["How should you give measurements when you answer me?", "Which unit system do I want you to use?"],
         ["Metric from here on, as you asked."]),
    slot("code_lang", "code", {"lang": ["Rust", "Go", "TypeScript", "Kotlin"]},
         ["Please keep any code examples in {lang} from now on, not Python."],
         ["Which language should your code samples be written in?"],
         ["Noted: examples in {lang} going forward."]),
    slot("no_bullets", "work", {},
         ["One rule for emails you draft for me: no bullet points, ever, only full sentences."],
         ["What formatting should you avoid in the emails you write for me?"],
         ["Understood, no bullets in drafts."]),
    slot("summary_first", "work", {},
         ["Could you start every answer with a one-line summary before the details? It really helps me."],
         ["How should your replies to me begin?"],
         ["Summary first from now on."]),
    slot("time24", "travel", {},
         ["Please write times in 24-hour format for me going forward."],
         ["How do I want times written?"],
         ["24-hour times from here on."]),
    slot("currency", "money", {"cur": ["euros", "Canadian dollars", "pounds sterling", "Swiss francs"]},
         ["Whenever you mention prices, give them in {cur}."],
         ["Which currency should you use when you quote costs?"],
         ["Prices in {cur} from now on."]),
    slot("spelling", "work", {"sp": ["British", "American"]},
         ["Use {sp} spelling in anything you write for me, please."],
         ["Which spelling conventions should you follow when writing for me?"],
         ["{sp} spelling it is."]),
    slot("nickname", "home", {"nick": ["Jo", "Sam", "Bea", "Mack", "Kit", "Ollie", "Ren", "Teddy"]},
         ["By the way, you can call me {nick}; everyone does."],
         ["What name should you use when you address me?"],
         ["Will do, {nick}."]),
    slot("signoff", "work", {"sign": ["Warm regards", "Cheers", "Best wishes", "All the best"]},
         ["When you draft emails for me, sign them off with '{sign}' and my first name."],
         ["How should the emails you draft for me end?"],
         ["I'll close drafts with '{sign}'."]),
    slot("brevity", "learning", {"words": ["150", "200", "250", "300"]},
         ["Unless I ask for depth, keep replies under {words} words."],
         ["How long should your answers be by default?"],
         ["Short answers, under {words} words, unless you ask."]),
    slot("calories", "cooking", {},
         ["Please always include rough calories per serving whenever you give me a recipe."],
         ["What extra information should come with the recipes you give me?"],
         ["Calories per serving included, as requested."]),
    slot("clarify", "code", {},
         ["If my request is ambiguous, ask me a clarifying question before you write a long answer."],
         ["What should you do when a request of mine is unclear?"],
         ["I'll ask first when something's ambiguous."]),
]

# Order: things that happen once, said when they happen: (said, as a question names it, echo).
EVENTS = [
    ("I finally enrolled in that Thursday-night ceramics course.", "signing up for pottery",
     "A ceramics course is a lovely way to switch off."),
    ("We booked the flights for my cousin's wedding.", "sorting out travel for the wedding", "Good to have the flights sorted."),
    ("We got the keys to the allotment plot today.", "getting a vegetable plot", "An allotment, how exciting."),
    ("I passed my driving test, second attempt!", "getting my licence", "Congratulations on the test!"),
    ("We hung the big framed map in the hallway at last.", "decorating the hallway", "The hallway must look great."),
    ("We repainted the kitchen over the weekend, a dark green.", "changing the kitchen colour", "Dark green is a bold choice."),
    ("I bought a secondhand road bike off a guy from work.", "getting a bicycle", "Enjoy the new bike."),
    ("I ran my first ever 10k race on Sunday.", "my first race", "Well done on the race."),
    ("I started volunteering at the food bank on Saturdays.", "starting to volunteer", "That's a generous use of a Saturday."),
    ("We adopted a rescue rabbit called Clover.", "bringing Clover home", "Clover is a great name for a rabbit."),
    ("I got my first tattoo, a small fern on my forearm.", "getting inked", "A fern is a nice first tattoo."),
    ("My new passport finally arrived.", "sorting out my travel documents", "One less thing to worry about."),
    ("I gave my talk at the team offsite and nobody fell asleep.", "my work presentation", "Glad the talk went well."),
    ("I joined the bouldering gym near the station.", "taking up climbing", "Bouldering is very addictive."),
    ("I upgraded my laptop, finally, after six years.", "the computer upgrade", "Six years is a good innings."),
    ("I went to my first salsa lesson and was terrible.", "starting dance lessons", "Everyone is terrible at the first lesson."),
    ("We switched electricity providers to a green tariff.", "changing energy supplier", "Good move on the tariff."),
    ("I submitted my tax return a whole month early.", "dealing with the tax paperwork", "A month early is impressive."),
    ("We planted an apple tree in the back garden.", "planting a fruit tree", "An apple tree is a long-term gift."),
    ("I bought tickets for the comedy festival.", "booking the stand-up shows", "Enjoy the festival."),
]

# Temporal, "when did I start": (start, later progress notes, question, echo)
STARTS = [
    ("I started the couch-to-5k plan this morning, week one day one.",
     ["Week {n} of couch-to-5k done and my shins are fine."],
     "When did I start the couch-to-5k programme?", "Good luck with the first week of running."),
    ("I had my first physio appointment for my shoulder today.",
     ["Physio session {n} was brutal, but the shoulder moves better."],
     "When did I begin physiotherapy?", "Glad you've finally got physio booked in."),
    ("I began keeping a journal tonight, ten minutes before bed.",
     ["I've kept up the evening journal for {n} weeks now."],
     "When did I start journaling?", "A short journal habit is a great idea."),
    ("I kicked off a no-spend month today, only essentials.",
     ["We're {n} weeks into the no-spend challenge and it's going better than expected."],
     "When did my no-spend challenge begin?", "Good luck with the no-spend month."),
    ("The kitchen renovation started this week; the builders ripped out the old units.",
     ["The renovation is in week {n} and we're washing dishes in the bathtub."],
     "When did the kitchen renovation get going?", "Renovations are chaos at first; it gets better."),
    ("I had my first session with a therapist this week.",
     ["Therapy session {n} was a good one, actually."],
     "When did I start seeing a therapist?", "Well done for starting therapy."),
    ("I started a drawing class at the community centre tonight.",
     ["Drawing class week {n}: we did hands, which are impossible."],
     "When did my drawing classes begin?", "A drawing class sounds like fun."),
    ("I started cycling to work today instead of taking the bus.",
     ["{n} weeks of cycling to work now, legs are getting used to it."],
     "When did I begin commuting by bike?", "Cycling in will do wonders for your mornings."),
]

# Temporal, "in the past week": news about someone, said in the window and outside it.
RELATIVES = ["dad", "grandmother", "uncle", "aunt", "father-in-law", "old roommate", "godson", "stepmother"]
NEWS = [("My {rel} is having knee surgery on Thursday.", "I hope the surgery goes smoothly."),
        ("My {rel} just announced they're retiring at the end of the year.", "Retirement, how exciting."),
        ("My {rel} is coming to stay with us for a few days.", "Enjoy the visit."),
        ("My {rel} lent me their camping gear for the summer.", "That's generous of them."),
        ("My {rel} got a puppy and sends me photos hourly.", "Puppy photos are the best kind of spam."),
        ("My {rel} and I had a real argument about money on the phone.", "Money arguments are hard."),
        ("My {rel} sent me a box of homemade jam.", "Homemade jam is a lovely gift."),
        ("My {rel} won a small lottery prize and won't stop talking about it.", "What luck."),
        ("My {rel} asked me to help fix a leaking roof.", "Roof leaks are urgent; good of you to help."),
        ("My {rel} took up open-water swimming, at their age.", "Open-water swimming takes nerve.")]

# Temporal, "in MONTH": a topic said in different months with different values.
MONTH_TOPICS = [
    ("book", BOOKS, "I'm halfway through {v} at the moment.", "Which book was I reading in {month}?"),
    ("restaurant", ["Salt & Ember", "Little Saigon Kitchen", "Osteria Nonna Pia", "The Tin Fork", "Zaatar House",
                    "Kōji", "Casa Ramona", "The Larder"],
     "We've booked a table at {v} for Saturday.", "Which restaurant had we booked in {month}?"),
    ("project", ["retiling the bathroom", "building a bookshelf", "fixing the garden fence", "insulating the loft",
                 "sanding the floorboards", "rewiring the porch light"],
     "This weekend's project is {v}.", "What DIY job was I doing in {month}?"),
    ("series", ["Slow Horses", "The Bear", "Severance", "Shōgun", "Fleabag", "Mare of Easttown", "Dark"],
     "We're bingeing {v} in the evenings.", "Which TV series were we watching in {month}?"),
]

# Relative (--relative): a life event said once, and what the user was doing on one side of it.
# (what is said, the event as a question tells it, the echo, the slot keys that would say a
# like event elsewhere in the chat: an update's move, job or car)
ANCHORS = [
    ("We finally moved into the new flat across town this weekend.", "I moved house",
     "I hope the new flat feels like home soon.", ["city"]),
    ("I started the new job at the agency today.", "I started my new job", "Good luck in the new role.",
     ["employer"]),
    ("We got back from the honeymoon in Crete last night.", "we got back from our honeymoon",
     "Welcome back, and congratulations again.", []),
    ("I had my wisdom teeth out yesterday, so it's soup for a week.", "I had my wisdom teeth out",
     "Rest up and go easy on your jaw.", []),
    ("I handed in my notice at the bank this morning.", "I quit the bank", "That's a big step.",
     ["employer"]),
    ("We sold the old car on Saturday; it's bikes and buses from now on.", "we sold our car",
     "Bikes and buses it is, then.", ["car"]),
    ("We got the keys to our allotment plot on Saturday.", "we got our allotment",
     "An allotment is a lovely thing to have.", []),
    ("I defended my thesis this morning and passed!", "I defended my thesis", "Congratulations, doctor!", []),
]
# (key, values, what is said, the question: {side} before/after, {event} an ANCHORS event)
RELATIVE_TOPICS = [
    ("podcast", ["Hardcore History", "Radiolab", "The Rest Is History", "Reply All", "99% Invisible",
                 "Song Exploder"],
     "I've been listening to {v} on my walks.", "Which podcast was I listening to {side} {event}?"),
    ("dinner", ["a lentil and spinach soup", "sheet-pan gnocchi", "black bean tacos", "a big miso ramen",
                "chickpea curry", "baked salmon with greens"],
     "My go-to weeknight dinner lately is {v}.", "What was my usual weeknight dinner {side} {event}?"),
    ("game", ["Stardew Valley", "Hades", "Celeste", "Outer Wilds", "Tetris Effect", "Slay the Spire"],
     "I'm hooked on {v} in the evenings.", "Which video game was I playing {side} {event}?"),
    ("coffee", ["flat whites", "oat-milk cortados", "pour-over", "cold brew", "moka-pot espresso",
                "plain filter coffee"],
     "I'm drinking {v} every morning at the moment.", "What coffee was I drinking {side} {event}?"),
    ("sport", ["five-a-side football", "lane swimming", "a spin class", "yoga on Thursdays",
               "badminton at the leisure centre", "parkrun"],
     "My weekly exercise right now is {v}.", "What exercise was I doing each week {side} {event}?"),
    ("learning", ["a pottery course", "guitar lessons", "a sign language class", "an evening French class",
                  "a first-aid course", "a woodworking class"],
     "I've signed up for {v}, one evening a week.", "What class was I taking {side} {event}?"),
]

# Multi-session: items of one list, each said in its own session.
MULTI = [
    slot("countries", "travel", {"v": COUNTRIES},
         ["I'd love to get to {v} next year.", "{v} is firmly on my list of places to visit now."],
         ["How many different countries have I said I want to visit?", "Which countries are on my travel wish list?"],
         ["{v} is a wonderful choice."], ["My coworker just got back from {v} and won't stop talking about it."]),
    slot("book", "learning", {"v": BOOKS},
         ["I finished {v} last night.", "Just turned the last page of {v}."],
         ["Which books have I told you I finished?", "How many books have I said I've finished?"],
         ["{v} has a great ending."], ["My book club is reading {v}, but I haven't started it."]),
    slot("tried", "cooking", {"v": ["shakshuka", "miso-glazed aubergine", "lamb tagine", "dal makhani",
         "mushroom risotto", "chicken katsu", "pad kra pao", "fish pie"]},
         ["I tried your {v} recipe and it was a hit.", "Made the {v} you suggested for friends on Saturday."],
         ["Which of your recipes have I told you I tried?", "How many of the dishes you suggested did I actually cook?"],
         ["Glad the {v} worked out."], ["My flatmate attempted {v} and set off the smoke alarm."]),
    slot("band", "music", {"v": BANDS},
         ["We saw {v} live last night, what a show.", "Got home late from the {v} gig."],
         ["Which bands have I seen live?", "What concerts have I been to?"],
         ["{v} live must have been great."], ["My colleague has tickets for {v} but I'm not going."]),
    slot("injury", "fitness", {"v": ["a sprained ankle", "a pulled hamstring", "a jammed finger", "a stiff neck",
         "tennis elbow"]},
         ["I've picked up {v}, annoyingly.", "Nursing {v} this week."],
         ["What injuries have I mentioned?", "How many times have I told you I got hurt?"],
         ["Rest {v} properly before you train again."], ["My running buddy is out with {v}."]),
    slot("visitors", "home", {"v": FIRST},
         ["My friend {v} is staying on our sofa this week.", "{v} from university is visiting us for a few days."],
         ["Which friends have come to stay with me?", "How many friends have stayed at my place?"],
         ["Have a lovely time with {v}."], ["My neighbour's friend {v} is staying next door."]),
    slot("plants", "garden", {"v": ["monstera", "fiddle-leaf fig", "snake plant", "string of pearls", "calathea",
         "bird of paradise", "pothos"]},
         ["I bought a {v} at the market today.", "I treated myself to a {v} for the living room."],
         ["Which houseplants have I bought?", "What plants have I told you I got?"],
         ["A {v} likes bright, indirect light."], ["My neighbour gave away a {v}, but I didn't take it."]),
    slot("courses", "learning", {"v": ["a first aid course", "a sourdough workshop", "an online SQL course",
         "a beginners' sailing course", "a watercolour workshop"]},
         ["I completed {v} over the weekend.", "Finished {v} today, certificate and all."],
         ["Which courses have I completed?", "How many courses have I said I finished?"],
         ["Congratulations on finishing {v}."], ["My boss keeps telling me to take {v}."]),
]

# ---------------------------------------------------------------------------------------
# Life domains: what the user asks for, context lines around it, and the material of the
# assistant's long answers. Domain text names no persona value (no city, language or
# instrument), so only the planted statements answer the questions.
# ---------------------------------------------------------------------------------------

DOMAINS = {
    "cooking": dict(
        asks=["Can you suggest {n} weeknight dinners built around {ingredient}?",
              "I want to batch-cook on Sunday for the whole week. Can you plan it around {ingredient} and {ingredient2}?",
              "How do I make a proper {dish} at home without special equipment?",
              "I'm hosting {n} people on {weekday}. Can you help me plan a menu that isn't stressful?",
              "My {dish} always comes out {problem}. What am I doing wrong?"],
        details=["I have {appliance} and one decent knife, not much else.",
                 "The shop near me is good for {ingredient} but hopeless for fresh herbs.",
                 "I usually cook for {n}, ideally with leftovers for lunch.",
                 "Last time the {dish} came out {problem}, and I still don't know why.",
                 "There's {ingredient} in the fridge that needs using up before it turns.",
                 "On a weeknight I have about {mins} minutes, more at weekends.",
                 "There's {spice} and {spice2} in the cupboard already.",
                 "I'm trying to keep each meal under {money} for everyone."],
        tips=["Toast {spice} in a dry pan for about {secs} seconds, until fragrant.",
              "If the {dish} comes out {problem}, look at the heat first: most home hobs run hotter than recipes assume.",
              "With {appliance} you can leave it alone while you do something else.",
              "Finish with something sharp, lemon or a splash of vinegar, to lift the whole plate.",
              "Cook the {veg} separately and fold them in at the end so they keep some bite.",
              "Let the {dish} rest for {mins} minutes before serving so it settles.",
              "For {n} people, plan on roughly {grams} grams of {ingredient} each.",
              "If {ingredient} gets expensive, {ingredient2} works with almost the same method."],
        acts=["salt {ingredient} the night before", "toast whole spices before grinding them",
              "roast {veg} at the highest heat your oven does", "taste and season again right at the end",
              "prep every ingredient before the pan goes on", "cook a double batch of {dish} and freeze half",
              "get the pan properly hot before adding the {ingredient}", "keep a jar of quick-pickled onions in the fridge",
              "write a loose meal plan every {weekday}", "deglaze the pan with a splash of stock",
              "cut {veg} into even pieces", "use {appliance} for the long, slow parts"],
        whys=["so the seasoning reaches the middle", "which builds a deeper flavour", "because it saves you a pan",
              "so dinner takes minutes on a weeknight", "which stops things sticking",
              "so nothing overcooks while you chop", "because texture matters as much as taste",
              "so leftovers still taste fresh"],
        heads=["Shopping list", "Prep ahead", "The method", "Timing", "Why it goes wrong", "Swaps", "Serving", "Leftovers"],
        words=dict(ingredient=["chickpeas", "chicken thighs", "salmon fillets", "firm tofu", "red lentils", "aubergine",
                               "butternut squash", "halloumi", "black beans", "cauliflower", "pork shoulder", "cod",
                               "sweet potatoes", "paneer", "orzo"],
                   dish=["risotto", "lasagne", "curry", "stir-fry", "frittata", "bolognese", "paella", "dal",
                         "roast chicken", "ramen broth", "focaccia", "pie crust"],
                   spice=["cumin seeds", "smoked paprika", "fennel seeds", "garam masala", "chilli flakes",
                          "coriander seeds", "sumac", "za'atar", "black mustard seeds"],
                   veg=["broccoli", "green beans", "carrots", "courgettes", "peppers", "spinach", "leeks", "cabbage"],
                   appliance=["a slow cooker", "a cast-iron pan", "a rice cooker", "an air fryer", "a Dutch oven",
                              "a pressure cooker"],
                   problem=["watery", "bland", "stodgy", "burnt on the bottom", "dry", "gluey"]),
        plan=("Shopping list for the week:", "- {ingredient}: {grams} g"),
        block=("What's in the fridge and cupboard right now:", "- {ingredient}: {grams} g")),
    "travel": dict(
        asks=["Can you help me plan {n} days for {trip}?", "What should I pack for {trip} in {month}?",
              "We're going on {trip}. How would you split the days?",
              "Is it cheaper to take the train or fly for {trip}? Walk me through it."],
        details=["We arrive around {clock} on the first day and leave early on the last.",
                 "Budget is roughly {money} a day each, not counting the room.",
                 "I'd like at least one day with nothing planned.",
                 "Last time we overpacked badly and paid for it in baggage fees.",
                 "We'll have a {vehicle} for part of the trip.", "I'm hoping to fit in {activity} at least once.",
                 "We're {n} adults, all fine with long walks."],
        tips=["Book {activity} for the morning of day {n}; crowds build quickly after {clock}.",
              "Pack layers: a thin base, a fleece and a waterproof shell cover most of {month}.",
              "Put one rest afternoon in the middle; trips fall apart on day {n} when everyone is tired.",
              "A {vehicle} makes sense outside town, but skip it in the centre, parking is painful.",
              "Roll clothes in packing cubes; it saves about {pct} percent of space and a lot of rummaging.",
              "Leave {mins} minutes of slack between anything ticketed.",
              "Most museums close one weekday; check before you build a day around one.",
              "Trains booked {weeks} weeks ahead are often half the walk-up price.",
              "A light daypack beats a tote bag for long walking days."],
        acts=["book {activity} for a morning slot", "keep one afternoon completely free",
              "buy the regional transport pass on arrival", "pack one outfit fewer than you think you need",
              "download offline maps before you leave", "check the time of the last train back",
              "keep copies of your documents offline", "eat your main meal at lunchtime",
              "pre-book anything with a timed entry", "put the long travel day at the start",
              "ask the host where locals actually eat", "carry a small amount of local cash", "book the first night near the station", "photograph your parking spot", "check opening days before you plan {activity}"],
        whys=["so the trip doesn't fall apart halfway", "which usually pays for itself within two days",
              "because signal drops the moment you leave town", "so there's room for whatever you find there",
              "which saves a surprising amount of money", "because queues build fast after {clock}",
              "so one delay doesn't cost you a whole day"],
        heads=["The plan, day by day", "Getting around", "Packing", "Money", "Food", "If it rains", "Bookings to make now"],
        words=dict(trip=["my cousin's wedding weekend", "a long weekend at the coast", "a hiking week in the mountains",
                         "a work conference trip", "a family reunion up north", "a city break with friends",
                         "a lake-cabin week"],
                   clock=["7am", "10am", "noon", "3pm", "6pm"], vehicle=["rental car", "camper van", "hire bike"],
                   activity=["a boat tour", "a cooking class", "a guided hike", "a food market crawl", "kayaking",
                             "a museum day", "a hot-spring visit"]),
        plan=("A possible outline:", "Day {i}: {activity} in the morning, free afternoon, dinner around {clock}"),
        block=("My rough draft so far:", "Day {i}: {activity}, then dinner around {clock}")),
    "fitness": dict(
        asks=["Can you build me a {n}-day-a-week strength plan?", "How do I get better at {exercise} without getting hurt?",
              "I've plateaued on {exercise}. What should I change?", "Can you check my training week and suggest tweaks?"],
        details=["I've been training for about {weeks} months, on and off.", "My sessions have to fit into {mins} minutes.",
                 "I have dumbbells up to {kg} kg at home.", "I slept badly last week and everything felt heavy.",
                 "I've been stuck at {kg} kg on {exercise} for weeks.", "I can run about {km} km without stopping."],
        tips=["Add {kg2} kg to {exercise} only when every set feels like a {rpe} out of ten.",
              "Sleep is the strongest recovery tool you have; {hours} hours beats any supplement.",
              "Drop the weight about {pct} percent for a lighter week every {weeks} weeks.",
              "If you miss a session, don't double up; just carry on with the next one.",
              "Increase weekly running distance by no more than {pct} percent.",
              "Three short sessions a week, done for months, beat six sessions for three weeks.",
              "For {exercise}, film from the side; you'll see what a mirror hides.",
              "Soreness is not a measure of a good session."],
        acts=["add weight to {exercise} only when every set feels solid", "warm up with a few light sets of {exercise}",
              "keep the easy runs truly easy", "log every session in a notebook", "pair {exercise} with {exercise2}",
              "stretch your hips after long desk days", "film a set of {exercise} from the side",
              "finish with five minutes of easy walking", "take a lighter week every {weeks} weeks",
              "keep one session a week purely for mobility", "eat a proper meal within a couple of hours of training", "stop each set with one or two reps in reserve", "walk on rest days", "retest your {exercise} every {weeks} weeks"],
        whys=["so progress stays steady", "because injuries cost far more time than rest days", "which keeps sessions short",
              "so you can see progress over months", "because form breaks down before muscles do",
              "which lets the tendons catch up"],
        heads=["The weekly plan", "Warm-up", "Main lifts", "Conditioning", "Recovery", "Progression", "Red flags"],
        words=dict(exercise=["squats", "deadlifts", "overhead press", "pull-ups", "lunges", "bench press", "hip thrusts",
                             "kettlebell swings", "rows"],
                   kg=["8", "12", "16", "20", "24", "40", "60"], kg2=["1", "2", "2.5", "5"], km=["3", "5", "8", "10"],
                   rpe=["six", "seven", "eight"], feel=["strong", "tired", "fine", "heavy"], reps=["5", "8", "10", "12"]),
        plan=("A sample week:", "{weekday}: {exercise} {n} x {reps}, then {exercise2} {n} x {reps}"),
        block=("Last week's log:", "{weekday}: {exercise}, {n} x {reps} at {kg} kg, felt {feel}")),
    "money": dict(
        asks=["Can you help me set up a budget I'll actually stick to?",
              "Should I pay off the {debt} faster or put more into savings?",
              "How big should my emergency fund be?", "Can you look at this month's spending and tell me where it leaks?"],
        details=["Take-home pay is around {income} a month.", "There's still {money2} left on the {debt}.",
                 "We spend too much on takeaways, honestly.", "I get paid on the {nth} of the month.",
                 "I'd like to save for {goal} by next year.", "Subscriptions are creeping up again."],
        tips=["Most people who list their subscriptions find {n} they forgot about.",
              "Keep three to six months of essential costs in an easy-access account.",
              "Put {pct} percent of any raise into savings before lifestyle catches up.",
              "Cash-back is not savings unless the money actually moves.",
              "A spending freeze on one category for a month shows how much of it was habit.",
              "Interest on the {debt} is the return you get for paying it off early.",
              "Round numbers are fine; a budget that is roughly right beats one you abandon."],
        acts=["automate the savings transfer on payday", "list every subscription", "pay the highest-interest debt first",
              "give each category a weekly cap", "review the budget every {weekday} evening",
              "keep a separate, named account for {goal}", "set up sinking funds for irregular costs",
              "wait 48 hours before any purchase over {money}", "check the {debt} statement line by line",
              "round up purchases into a savings pot", "keep receipts for anything over {money}", "call the provider once a year to renegotiate", "move the bank app off your home screen", "plan gifts at the start of the year"],
        whys=["so the money leaves before you can spend it", "because small leaks add up over a year",
              "which makes the maths work in your favour", "so surprises don't wreck the month",
              "because a weekly number is easier to feel", "which turns a vague goal into a visible one"],
        heads=["Where the money goes", "The plan", "Debt", "Savings", "Automation", "Checking in", "What to cut first"],
        words=dict(debt=["credit card", "car loan", "student loan", "overdraft"],
                   income=["$2,900", "$3,400", "$4,100", "$5,200"], money2=["$1,800", "$4,500", "$9,000", "$12,000"],
                   nth=["1st", "15th", "25th", "28th"], goal=["a house deposit", "a new roof", "a sabbatical", "a wedding"],
                   merchant=["SuperSave", "CityTransit", "StreamFlix", "Corner Deli", "PowerGrid", "BookNook", "FuelStop"],
                   category=["food", "transport", "subscriptions", "eating out", "utilities", "books"]),
        plan=("A starting point for the month:", "- {category}: {money2}"),
        block=("Here's this month so far:", "day {i}, {merchant}, {category}, {money}")),
    "garden": dict(
        asks=["What can I grow on {spot} that won't die on me?", "My {crop} leaves are turning {symptom}. Help?",
              "Can you plan a planting calendar for {spot}?", "How do I deal with {pest} without losing everything?"],
        details=["The spot gets about {hours} hours of direct sun.", "I water every {weekday} and sometimes forget.",
                 "The soil is heavy clay.", "Last year the {crop} bolted almost immediately.",
                 "I noticed {pest} on the undersides of the leaves."],
        tips=["{crop} leaves turning {symptom} usually point to watering before anything else.",
              "Feed containers every {weeks} weeks in summer; nutrients wash out fast.",
              "A pot without drainage holes drowns roots quietly.",
              "{crop} likes steady moisture more than it likes a lot of water.",
              "Slugs do most of their damage on damp nights; that's when to go out with a torch.",
              "Compost in {month} gives the soil time to settle before planting."],
        acts=["water deeply and less often", "mulch with {mulch}", "hand-pick {pest} in the evening",
              "sow {crop} in small batches every {weeks} weeks", "pinch out the tips of the {crop}",
              "check the drainage holes", "plant marigolds near the {crop}",
              "test the soil with a finger before watering", "rotate where the {crop} grows each year",
              "water in the morning rather than the evening", "label everything you sow", "thin seedlings ruthlessly", "keep a watering can full so the water is at air temperature", "cut back dead growth in {month}"],
        whys=["so roots follow the moisture down", "because pots dry out far faster than beds",
              "which keeps weeds down too", "so you're never swamped with one crop",
              "because most pests hide from the daytime sun", "which makes the plants bushier"],
        heads=["What to plant", "Soil", "Watering", "Pests", "Calendar", "Harvesting"],
        words=dict(spot=["a north-facing balcony", "a windy rooftop", "two raised beds", "a shady corner", "window boxes"],
                   crop=["tomato", "courgette", "basil", "lettuce", "chilli", "strawberry", "runner bean"],
                   symptom=["yellow", "brown at the edges", "spotty", "curled"],
                   pest=["aphids", "slugs", "whitefly", "vine weevils"], mulch=["bark chips", "straw", "leaf mould"],
                   state=["doing well", "struggling", "flowering", "leggy"]),
        plan=("A planting outline:", "- {crop}: sow in {month}, first harvest after about {weeks} weeks"),
        block=("What's planted right now:", "- {crop}, sown {weeks} weeks ago, {state}")),
    "home": dict(
        asks=["How do I fix {repair} myself?", "Is {repair} a DIY job or should I call someone?",
              "Can you help me plan a weekend {room} refresh?", "What tools do I actually need for {repair}?"],
        details=["The building is from the {decade}.", "I have a drill and a basic screwdriver set.",
                 "I got a quote of {money2} and that seems steep.", "It started after the cold snap last week.",
                 "The {room} is small and gets little light."],
        tips=["For {repair}, take photos at every step so reassembly isn't guesswork.",
              "Silicone needs {hours} hours to cure; don't shower before then.",
              "Buildings from the {decade} often hide surprises behind plaster, so budget {pct} percent extra.",
              "Most dripping taps need a washer that costs less than a coffee.",
              "A {trade} will often give a cheaper price for work in a quiet season.",
              "Good lighting changes a {room} more than new furniture does."],
        acts=["turn off the water or power at the source", "take photos at every step", "buy a decent {tool}",
              "get {n} quotes for anything structural", "sand once the filler is completely dry",
              "let silicone cure for a full day", "paint the ceiling a shade lighter than the walls",
              "read the manual before you start", "keep screws in labelled cups",
              "check for pipes and cables before you drill", "buy ten percent more tiles than you need", "open a window while the paint dries", "protect the floor before you start", "tighten fittings by hand first"],
        whys=["so reassembly isn't guesswork", "because older buildings always hide something",
              "which saves a second trip to the shop", "so the finish looks professional",
              "because the cheap version breaks halfway through", "which makes a small room feel taller"],
        heads=["What you'll need", "Step by step", "Safety first", "When to call a pro", "Costs", "Finishing"],
        words=dict(repair=["a dripping tap", "a running toilet", "a squeaky door", "cracked grout", "a sticking window",
                           "a tripped circuit", "a wobbly banister"],
                   room=["bedroom", "hallway", "bathroom", "living room", "home office"],
                   decade=["1930s", "1960s", "1980s", "1990s"], money2=["$180", "$350", "$600", "$1,200"],
                   tool=["stud finder", "multi-tool", "spirit level", "cordless drill", "caulking gun"],
                   trade=["plumber", "electrician", "decorator", "joiner", "tiler"]),
        plan=("What to buy:", "- {tool}, around {money}"),
        block=("Quotes so far:", "- {trade}: {money2}, {n} days")),
    "pets": dict(
        asks=["How do I stop my dog pulling on the lead?", "Our cat scratches the sofa. What works?",
              "What's a sensible feeding routine for a {age} pet?", "How do I get a pet used to {challenge}?"],
        details=["Walks are mostly on busy pavements.", "We've tried {product} without much luck.",
                 "The vet said weight is borderline.", "Mornings are chaotic and the routine slips."],
        tips=["Scratching posts should be taller than the animal at full stretch, and sturdy.",
              "A {age} pet needs a vet check every {weeks} months at least.",
              "{product} helps, but it's not a substitute for practice.",
              "Treats count towards daily food; most weight gain hides there.",
              "Most pulling stops once walking forward only happens on a loose lead.",
              "Older pets often need smaller, more frequent meals."],
        acts=["reward the behaviour within a second or two", "keep training sessions to five minutes",
              "practise {challenge} in tiny steps", "feed measured portions at fixed times",
              "end every session on a success", "add {n} short play sessions a day",
              "ignore attention-seeking and reward calm",
              "keep the lead short but loose", "stop walking the moment the lead goes tight", "rotate the toys every few days", "give them a quiet place that is only theirs", "brush their teeth a few times a week", "weigh them once a month"],
        whys=["because timing is everything for them", "so their attention doesn't fade",
              "which stops the slow weight creep", "so they learn the routine", "because tired animals are calmer",
              "which builds their confidence"],
        heads=["Why it happens", "Training steps", "Gear", "Routine", "When to ask the vet"],
        words=dict(age=["young", "senior", "middle-aged", "newly adopted"],
                   challenge=["the car", "the vacuum", "nail trims", "being alone", "the carrier"],
                   product=["a front-clip harness", "a calming spray", "a slow feeder", "a puzzle toy"],
                   food=["kibble", "wet food", "chicken", "pumpkin"], clock=["7:00", "8:30", "12:30", "18:00"]),
        plan=("A daily routine:", "{clock}: {grams} g {food}, then a short play session"),
        block=("Feeding log:", "{weekday}: {grams} g {food} at {clock}")),
    "work": dict(
        asks=["Can you draft an email to {recipient} about {subject}?", "Help me prepare for {meeting}.",
              "How do I say no to {request} without sounding difficult?", "Can you tighten this paragraph for {recipient}?"],
        details=["The tone should be friendly but firm.", "This has dragged on for {weeks} weeks already.",
                 "I need it out before {weekday}.", "Last time my email was misread as angry.",
                 "The deadline moved twice without anyone telling me."],
        tips=["For {meeting}, write down three things you want agreed and one you can give up.",
              "If {subject} is sensitive, raise it in person first and follow up in writing.",
              "Short emails get faster replies than thorough ones.",
              "If a thread passes five replies, a ten-minute call is usually quicker.",
              "A polite no now is kinder than a late no in {weeks} weeks."],
        acts=["lead with the ask in the first line", "name one specific next step and a date",
              "acknowledge the constraint before you push back", "cut the adjectives",
              "send a short recap within an hour", "offer two options instead of a yes or no",
              "keep the email under five sentences", "sleep on anything written while annoyed",
              "agree who decides before the meeting starts",
              "put the deadline in the subject line", "copy in only the people who need to act", "reread the draft out loud", "suggest a time instead of asking when they're free", "write the decision down straight after the meeting"],
        whys=["because people skim", "so nobody can misread the tone", "which moves decisions along",
              "because memories drift fast", "which lowers defences", "so the follow-up is easy"],
        heads=["Draft", "Why this works", "Before you send", "If they push back", "Follow-up"],
        words=dict(recipient=["my team lead", "a client", "the finance team", "our letting agent", "the school office"],
                   subject=["a missed deadline", "budget approval", "a refund", "moving my start date", "a schedule change"],
                   meeting=["a salary review", "a project kickoff", "a tricky one-to-one", "quarterly planning"],
                   request=["extra weekend work", "another committee", "an unrealistic deadline"],
                   line=["Thanks for getting back to me so quickly.", "I wanted to flag something before it becomes a problem.",
                         "Could we find fifteen minutes this week?", "I've attached the figures we discussed.",
                         "As agreed on the call, the first draft is ready.", "Apologies for the slow reply.",
                         "I'm not able to take this on before the end of the month.",
                         "The revised timeline is in the shared folder.", "Let me know if anything is unclear.",
                         "I'd suggest we revisit this after the launch."]),
        block=("My draft so far:", "{line}")),
    "health": dict(
        asks=["How can I sleep better? I wake up around {clock} most nights.",
              "What's a sensible way to cut back on {habit}?", "How do I make {habit2} a habit that sticks?",
              "Can you explain what my {test} results mean in plain words?"],
        details=["I sit at a desk for most of the day.", "Caffeine after lunch is probably part of it.",
                 "I tried an app for {weeks} weeks and gave up.", "Stress at work has been high.",
                 "Last night I slept about {hours} hours."],
        tips=["Cut {habit} by about {pct} percent a week rather than all at once.",
              "Ask your GP to explain anything in the {test} flagged outside the range.",
              "Waking at {clock} once in a while is normal; lying awake for an hour is worth mentioning to a doctor.",
              "Most habits stick better when they take under two minutes to start.",
              "If you track sleep, look at weekly averages, not single nights."],
        acts=["keep the same wake-up time seven days a week", "dim the lights an hour before bed",
              "tie {habit2} to something you already do daily", "write your worries down before bed",
              "take a short walk after lunch", "drink more water earlier in the day",
              "keep screens out of the bedroom", "stop caffeine by early afternoon",
              "get daylight within an hour of waking", "keep the bedroom cool and dark", "eat dinner a few hours before bed", "note your energy level each afternoon", "swap one coffee for water"],
        whys=["which anchors everything else", "so the change sticks", "because willpower runs out by evening",
              "which helps both energy and sleep", "so you're not up in the night",
              "because one number on its own says little"],
        heads=["What's going on", "Small changes", "A simple routine", "What to track", "When to see a doctor"],
        words=dict(clock=["2am", "3am", "4am", "5am"], habit=["sugar", "late-night scrolling", "caffeine", "takeaways"],
                   habit2=["stretching", "drinking water", "evening walks", "meditation"],
                   test=["blood test", "cholesterol panel", "vitamin D check", "thyroid panel"]),
        block=("Sleep log:", "night {i}: {hours} h, woke {n} times")),
    "language": dict(
        asks=["How do I stop mixing up {grammar} in my target language?", "Can you give me a {mins}-minute daily routine?",
              "How do I get over the fear of speaking?", "What's a good way to learn {n} new words a day and keep them?"],
        details=["I can read simple articles but freeze when speaking.", "My tutor says {grammar} is my weak spot.",
                 "I've got a conversation exchange every {weekday}.", "Listening at native speed is still hard."],
        tips=["For {grammar}, write five sentences about your own day each evening.",
              "Aim for {mins} minutes of listening to something slightly too hard every day.",
              "Comprehension runs ahead of speaking for a long time; that gap is normal.",
              "Ten minutes every day beats an hour on {weekday}.",
              "Mistakes you make out loud are the ones you remember fixing."],
        acts=["learn words as short phrases", "shadow a short clip every day", "write five sentences about your day",
              "review old cards before adding new ones", "talk to yourself while cooking",
              "keep a list of the mistakes you get corrected on", "read the same short text three times",
              "record yourself speaking once a week",
              "label things around the house", "change your phone's language for a week", "learn the hundred most common verbs first", "read children's books without shame", "prepare three questions before each exchange"],
        whys=["because phrases carry the grammar with them", "which makes speaking feel less scary",
              "so the backlog doesn't kill your motivation", "because repetition beats novelty early on",
              "so you can hear the progress"],
        heads=["Why it's hard", "Daily routine", "Speaking", "Vocabulary", "Grammar", "Measuring progress"],
        words=dict(grammar=["verb tenses", "noun genders", "particles", "word order", "the subjunctive"],
                   word=["although", "to borrow", "the receipt", "meanwhile", "to insist", "stubborn", "to postpone",
                         "the landlord", "roughly", "to complain", "the appointment", "nevertheless"]),
        plan=("A week of practice:", "{weekday}: {mins} min on {grammar}, then ten new words"),
        block=("Words I keep forgetting:", "- {word}")),
    "music": dict(
        asks=["How should I structure practice when I only have {mins} minutes?", "How do I get my timing steadier?",
              "Can you suggest a few pieces for a beginner around {level}?", "How do I stop tensing up when I play?"],
        details=["I practise in the evening after work.", "My teacher says I rush the quiet passages.",
                 "I'm working through a method book, about chapter {n}.", "I recorded myself and hated it."],
        tips=["Set the metronome {pct} percent slower than comfortable and nudge it up.",
              "Spend the first {mins} minutes on slow scales.",
              "Slow practice feels like wasted time, but it's where accuracy is built.",
              "Playing for someone once a month does more for nerves than any exercise.",
              "Timing problems are often breathing problems in disguise."],
        acts=["start with slow scales and a metronome", "practise the hardest two bars first",
              "record yourself every week", "shake out your hands every few minutes",
              "split practice into three short blocks", "sing the phrase before playing it",
              "end on something you can already play well",
              "tap the beat with your foot", "practise with a drone note for tuning", "play along with a recording", "mark the tricky bars in pencil", "stop before your hands get tired"],
        whys=["while you're fresh", "because it's the fastest feedback there is", "so tension never builds up",
              "which keeps practice enjoyable", "because your ears lead your hands"],
        heads=["Session plan", "Technique", "Repertoire", "Timing", "Staying relaxed"],
        words=dict(level=["grade 2", "grade 3", "early intermediate"],
                   piece=["a minuet", "a folk tune", "scale work", "a slow étude", "sight-reading"]),
        plan=("A practice week:", "{weekday}: {mins} min, mostly {piece}"),
        block=("Practice log:", "day {i}: {mins} min, {piece}")),
    "learning": dict(
        asks=["Can you recommend a few books like the last one I enjoyed?", "How do I read more when I'm always tired?",
              "Help me plan a {weeks}-week self-study course on {field}.", "How do I take notes I'll actually reuse?"],
        details=["I read mostly at weekends.", "I abandoned three books this month.",
                 "I want something I can finish in {weeks} weeks.", "My notes app is a graveyard."],
        tips=["For {field}, pair one textbook with one small practical project.",
              "Reading at the same time each day turns it into a habit.",
              "Notes are only useful if they answer a question you'll have later.",
              "It's fine to read three books at once if they're different kinds."],
        acts=["read {n} pages before looking at your phone", "keep one book in every room",
              "write a three-line summary after each chapter", "quit books you're not enjoying",
              "review your notes every {weekday}", "set a {mins}-minute timer and just start",
              "explain what you learned to someone else",
              "keep a running list of books to read", "read the conclusion of a non-fiction book first", "put the phone in another room while reading", "join a book club or study group", "alternate hard and easy books"],
        whys=["which doubles what you remember", "so there's always one at hand", "because life is short",
              "so the notes earn their keep", "which makes starting painless"],
        heads=["Suggestions", "Building the habit", "Notes that work", "A plan"],
        words=dict(field=["statistics", "European history", "basic electronics", "philosophy of mind", "drawing"],
                   topic=["chapter notes", "key terms", "questions for next week", "open problems", "summaries"]),
        plan=("A plan:", "Week {i}: {field}, {n} chapters and one exercise set"),
        block=("My notes from last week:", "- {topic}: {n} pages, {mins} min")),
}

# Sentence frames shared by every domain, filled with the domain's actions and reasons:
# this is where most of the variety of the assistant's answers comes from.
FRAMES = ["{act}, {why}.", "If you only change one thing this week, {act}.",
          "It sounds fussy to {act}, but it makes a real difference.", "Most people skip this: {act}, {why}.",
          "On a busy {weekday}, just {act} and leave the rest.", "I'd {act} first, and {act2} after that.",
          "The mistake I see most often is forgetting to {act}.", "Make it a habit to {act}, {why}.",
          "You don't need to be strict about it, but {act} when you can, {why}.", "Before anything else, {act}.",
          "When in doubt, {act}.", "Once that's done, {act}, {why}.",
          "People often ask whether it's worth it to {act}. In my experience it is, {why}.",
          "Write yourself a note to {act}; it's easy to forget halfway.",
          "For what you described, I'd {act}, {why}.", "Don't aim for perfect here: {act} and adjust next time.",
          "A simple rule: {act}, then {act2}.", "If that feels like too much, {act} and nothing else for now.",
          "Given what you said about last time, I'd {act}.", "Over the next {weeks} weeks, try to {act}.",
          "Try to {act}; you'll notice the difference within a week or two."]
GENERIC = ["Start smaller than feels necessary; a plan you keep beats an ambitious one you drop.",
           "Write down what you actually did each day for a week; the pattern is usually obvious.",
           "Change one thing at a time, otherwise you won't know what helped.",
           "The first attempt is usually messy; the second is where it clicks.",
           "Keep a short list of what worked, so you don't relearn it every few months.",
           "Most of the benefit comes from the boring basics done consistently.",
           "Give it two or three weeks before you judge whether it's working.",
           "Put the first step in your calendar with a time, not just a day.",
           "Decide in advance what you'll do when the plan slips, because it will.",
           "Ask someone who has done it recently; their advice is fresher than any guide.",
           "Spend a little more on the one thing you use every day, and less on the rest.",
           "If two sources disagree, try both for a week and keep what suits you.",
           "Use what you already have before buying anything new.",
           "Small, regular check-ins beat big occasional overhauls.",
           "Getting back on track after a bad week is the real skill, not never slipping.",
           "Make the next step obvious and easy; motivation follows action more than the reverse.",
           "Expect the middle stretch to feel slow; that's where most people give up.",
           "Track only what you'll act on; the rest is noise.",
           "Plan for the realistic version of your week, not the ideal one.",
           "Leave some slack in the plan, because life always takes some of it.",
           "It's easier to keep going than to restart, so protect the streak on bad days with a tiny version.",
           "Look at what went well last month before planning what to fix.",
           "Cheap experiments first: try the free version before paying for the fancy one.",
           "If a rule keeps getting broken, the rule is probably wrong, not you.",
           "Keep the setup visible; out of sight really is out of mind.",
           "A checklist is boring, and that is exactly why it works.",
           "Don't compare your week three to someone else's year three.",
           "When you're unsure, pick the option that's easiest to undo.",
           "Note what you'd do differently while it's fresh; you won't remember in a month.",
           "Most setbacks are about timing, not ability."]
# The same actions in the user's voice, for requests that read like a person's.
USER_FRAMES = ["I tried to {act} last {weekday}, but it didn't really work.", "Someone told me to {act}; is that worth it?",
               "I always forget to {act}.", "My plan was to {act} this weekend.", "Should I {act}? I keep going back and forth.",
               "I've never once managed to {act}."]

INTROS = ["Happy to help with this.", "Good question; there are a few moving parts here.",
          "Here's how I'd approach it.", "Let's break this down.", "Short version first, then the details.",
          "This is a common problem, and it's fixable.", "Thanks for the detail, that makes it much easier.",
          "Let me lay out a plan you can adapt.", "A few thoughts, in order of how much they matter."]
CLOSINGS = ["Want me to turn this into a checklist?", "Tell me how it goes and we can adjust.",
            "If anything here doesn't fit, say so and I'll rework it.", "I can go deeper on any of these.",
            "Shall I put together a shorter version you can keep on your phone?",
            "Let me know which part you want to tackle first."]
FOLLOWUPS = ["Thanks, that helps a lot.", "That worked, mostly.", "Okay, I tried some of this.",
             "Great, one more thing.", "Hmm, I'm not sure about the second part.", "Perfect, thank you."]
REMARKS = ["fine as it is", "start with this one", "could go if you need room", "worth a second look",
           "keep this", "this is the one to change first", "move it to {weekday}", "good value", "cut this back a bit",
           "double it if you can", "I'd drop this one", "this looks right", "check this against last week",
           "plan around this one", "probably too much", "a bit low", "don't change this yet", "nice"]
PASTED = ["This is the plan I found online, but I'm not convinced:", "A friend sent me this, does it make sense?",
          "Here's what a forum thread suggested:", "I copied this from an article I half trust:",
          "This is what I wrote down last time; it didn't really work:"]
LIFE = ["Work has been busy, so I'm doing this in bits.", "It's been raining all week here.",
        "Weekend plans fell through, so I finally have time for this.", "I'm writing this on my phone on the bus.",
        "Sorry if this is a bit rambling.", "I've read three articles and they all disagree.",
        "I'd rather do it properly once than redo it in a month.", "Money is a bit tight this month."]

# ---------------------------------------------------------------------------------------
# Programming help: real prose and code from Python's standard library, so these answers
# have the vocabulary of real documentation rather than of a few templates.
# ---------------------------------------------------------------------------------------

STDLIB = sorted("""argparse ast base64 bdb bisect calendar cmd codecs colorsys configparser contextlib copy
csv dataclasses difflib dis email.utils enum filecmp fileinput fnmatch fractions ftplib functools getopt
gettext glob graphlib gzip heapq hmac html.parser http.client http.cookies imaplib inspect ipaddress json
json.decoder linecache locale logging logging.handlers mailbox mimetypes netrc numbers optparse pathlib
pickle pkgutil platform poplib pprint queue quopri random reprlib sched secrets selectors shlex shutil
smtplib socketserver statistics string tarfile tempfile textwrap threading timeit tokenize trace
traceback typing urllib.parse urllib.request uuid warnings wave weakref xml.dom.minidom zipfile""".split())
PROJECTS = ["a CLI that backs up my photos", "a small web app for our book club", "a script that reconciles bank CSVs",
            "a bot that reminds the team about stand-up", "a scraper for train delays", "a home-automation dashboard",
            "an inventory tool for a friend's shop", "a parser for my running watch exports"]
BUGS = ["an off-by-one that only shows on the last page", "it gets slow on large inputs",
        "tests pass locally but fail in CI", "file names with accents crash it", "it leaks file handles",
        "timezones go wrong around daylight saving", "errors get swallowed silently"]
CODE_DETAILS = ["I'm on Python 3.11.", "The input is a few thousand lines.", "It runs nightly from cron.",
                "I'd like to keep the code readable for a colleague.", "A test would be nice too.",
                "It worked fine until last week.", "I don't want to add dependencies."]
CODE_TIPS = ["Write a failing test that reproduces the bug before changing anything.",
             "Log the inputs at the boundary; most bugs are data, not logic.",
             "Keep functions small enough to read without scrolling.",
             "Use a context manager for anything that must be closed.",
             "Pin the dependency versions so CI and your laptop agree.",
             "Reach for the standard library first; it is well tested and documented.",
             "Name things after what they mean, not how they are stored.",
             "Profile before you optimise; the slow part is rarely where you expect."]


def load_stdlib():
    """(module, name, docstring, source) for the public functions and methods of the modules
    above, sorted: docstrings of 200+ characters, sources of 300 to 3,000 characters."""
    out = []
    warnings.simplefilter("ignore")
    for modname in STDLIB:
        try:
            mod = importlib.import_module(modname)
        except Exception:
            continue
        for name in sorted(vars(mod)):
            obj = vars(mod)[name]
            if name.startswith("_") or getattr(obj, "__module__", None) != modname:
                continue
            members = [(name, obj)]
            if inspect.isclass(obj):
                members += [(f"{name}.{m}", f) for m, f in sorted(vars(obj).items())
                            if inspect.isfunction(f) and not m.startswith("_")]
            for qualname, f in members:
                if not inspect.isfunction(f):
                    continue
                doc = inspect.getdoc(f) or ""
                try:
                    src = inspect.getsource(f)
                except (OSError, TypeError):
                    continue
                if len(doc) >= 200 and 300 <= len(src) <= 3000:
                    out.append((modname, qualname, doc, textwrap.dedent(src)))
    return out


# ---------------------------------------------------------------------------------------
# Filling templates.
# ---------------------------------------------------------------------------------------

FIELD = re.compile(r"\{(\w+)\}")


def fill(rng, template, words=None, fixed=None):
    """Fill each {field} from `fixed`, else at random from `words`, else COMMON. A field
    ending in a digit (`spice2`) draws from the pool of `spice`, a value not yet used.
    `fixed` receives the values drawn, so a caller can keep using them (an answer stays on
    the ingredient its request named)."""
    chosen = fixed if fixed is not None else {}

    def value(match):
        key = match.group(1)
        if key not in chosen:
            base = key.rstrip("0123456789")
            pools = [(words or {}).get(key), (words or {}).get(base), COMMON.get(key), COMMON.get(base)]
            pool = next((p for p in pools if p), None)
            if pool is None:
                raise KeyError(f"no values for {{{key}}} in {template!r}")
            taken = [v for k, v in chosen.items() if k.rstrip("0123456789") == base]
            chosen[key] = rng.choice([v for v in pool if v not in taken] or pool)
        return str(chosen[key])

    return FIELD.sub(value, template)


def lower_first(sentence):
    """`My sister…` → `my sister…` after a lead-in; names and `I` keep their capital."""
    word = sentence.split(" ", 1)[0]
    return sentence[0].lower() + sentence[1:] if word in ("My", "We", "Our", "We've", "We're", "Things") else sentence


# ---------------------------------------------------------------------------------------
# The chat skeleton: sessions and turns, with what was planted in each.
# ---------------------------------------------------------------------------------------

class Turn:
    def __init__(self, sid, n, role, domain):
        self.sid, self.n, self.role, self.domain = sid, n, role, domain
        self.said = []      # planted sentences of a user turn (statements and distractors)
        self.evidence = 0   # how many of them are question evidence (at most 2 per turn)
        self.echoes = []    # sentences the assistant says back
        self.paste = None   # a user turn that pastes a huge log: never evidence
        self.subject = {}   # a request's topic words (its ingredient, trip…), kept by the answer
        self.listing = []   # the lines of a list the user pasted, which the answer goes through
        self.text = ""

    @property
    def id(self):
        return f"S{self.sid}:{self.n}"


class Session:
    def __init__(self, sid, date, size, domains):
        self.sid, self.date = sid, date
        self.turns = [Turn(sid, n, "user" if n % 2 else "assistant", domains[(n - 1) * len(domains) // size])
                      for n in range(1, size + 1)]


def lay_out(rng, n_turns, span_days):
    """Sessions of 4–24 turns totalling n_turns, dated over about span_days."""
    sizes = []
    while sum(sizes) < n_turns:
        left = n_turns - sum(sizes)
        size = min(rng.randrange(4, 25, 2), left)
        if left - size == 2:                        # never leave a 2-turn session
            size += 2 if size < 24 else -2
        sizes.append(size)
    start = dt.datetime(2025, 9, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=rng.randrange(150))
    mean_gap = span_days / max(1, len(sizes) - 1)
    names = list(DOMAINS) + ["code"] * 3          # programming help is the most common topic
    sessions, day = [], start
    for sid, size in enumerate(sizes, 1):
        if sid > 1:
            day += dt.timedelta(days=max(1, round(mean_gap * rng.uniform(0.3, 1.7))))
        when = day.replace(hour=rng.randrange(7, 23), minute=rng.randrange(60))
        domains = [rng.choice(names)] + ([rng.choice(names)] if size >= 10 and rng.random() < .25 else [])
        sessions.append(Session(sid, when, size, domains))
    return sessions


def iso(when):
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------
# Planting statements and asking questions.
# ---------------------------------------------------------------------------------------

class Planner:
    """Places a persona's statements into user turns and writes the questions about them."""

    def __init__(self, rng, sessions, asked_at):
        self.rng, self.sessions, self.asked_at = rng, sessions, asked_at
        self.used_keys, self.used_values, self.questions = [], [], []

    def draw(self, pools):
        """Values for a slot's fields, none of them already used by this persona."""
        out = {}
        for field, pool in pools.items():
            options = [v for v in pool if v not in self.used_values]
            out[field] = self.rng.choice(options or pool)
        self.used_values.extend(out.values())
        return out

    def user_turns(self, sids=None, evidence=True):
        """User turns (not pastes) of the given sessions (indexes) with room for one more
        sentence: four at most, two of them evidence."""
        sessions = self.sessions if sids is None else [self.sessions[i] for i in sids]
        return [t for s in sessions for t in s.turns if t.role == "user" and not t.paste
                and len(t.said) < 4 and (not evidence or t.evidence < 2)]

    def plant(self, turn, sentence, echo=None, evidence=True, recall=False):
        """Says `sentence` in `turn`. The reply usually echoes it; with `recall` (a fact about
        the user), some later answer sometimes brings it up again."""
        turn.said.append(sentence)
        turn.evidence += evidence
        if echo and self.rng.random() < .7:
            self.sessions[turn.sid - 1].turns[turn.n].echoes.append(echo)
        if echo and recall and self.rng.random() < .3:
            later = [t for s in self.sessions[turn.sid:] for t in s.turns if t.role == "assistant"]
            if later:
                self.rng.choice(later).echoes.append("Keeping in mind what you told me earlier: " + lower_first(echo))

    def pick(self, sids=None, domain=None, avoid=()):
        """A user turn for a statement; half the time in a session on the slot's own domain,
        so the assistant's long answer there is about the same topic."""
        pool = [t for t in self.user_turns(sids) if t not in avoid]
        on_topic = [t for t in pool if t.domain == domain]
        if on_topic and self.rng.random() < .5:
            pool = on_topic
        return self.rng.choice(pool) if pool else None

    def distract(self, templates, pools, avoid, count):
        """Puts look-alike sentences (someone else's dog, a colleague's city) in other turns."""
        for _ in range(count if templates else 0):
            pool = [t for t in self.user_turns(evidence=False) if t not in avoid]
            if pool:
                said = fill(self.rng, self.rng.choice(templates), fixed=self.draw(pools))
                self.plant(self.rng.choice(pool), said, evidence=False)

    def ask(self, kind, question, turns):
        self.questions.append({"question": question, "kind": kind,
                               "evidence": [t.id for t in sorted(turns, key=lambda t: (t.sid, t.n))],
                               "asked_at": iso(self.asked_at)})

    def free(self, slots):
        """Slots whose key this persona has not used yet, in random order."""
        return [s for s in self.rng.sample(slots, len(slots)) if s["key"] not in self.used_keys]

    # One method per kind; each returns False when the chat has no room for it.

    def fact(self, asked=True):
        for s in self.free(FACTS):
            turn = self.pick(domain=s["domain"])
            if turn is None:
                return False
            self.used_keys.append(s["key"])
            v = self.draw(s["pools"])
            self.plant(turn, fill(self.rng, self.rng.choice(s["say"]), fixed=v),
                       fill(self.rng, self.rng.choice(s["echo"]), fixed=v), recall=True)
            self.distract(s["other"], s["pools"], [turn], self.rng.randint(1, 2))
            if asked:
                self.ask("fact", self.rng.choice(s["ask"]), [turn])
            return True
        return False

    def update(self):
        n = len(self.sessions)
        for s in self.free(UPDATES):
            first = self.pick(range(0, max(1, n * 3 // 5)), s["domain"])
            if first is None:
                return False
            gap = first.sid + max(1, n // 6)
            second = self.pick(range(min(gap, n - 1), n), s["domain"], avoid=[first])
            if second is None or second.sid <= first.sid:
                continue
            self.used_keys.append(s["key"])
            old, new = self.draw(s["pools"])["v"], self.draw(s["pools"])["v"]
            v = {"old": old, "new": new}
            self.plant(first, fill(self.rng, self.rng.choice(s["say"]), fixed=v))
            self.plant(second, fill(self.rng, self.rng.choice(s["change"]), fixed=v),
                       fill(self.rng, s["echo"][0], fixed=v), recall=True)
            between = self.user_turns(range(first.sid, second.sid - 1), evidence=False)
            if s.get("again") and between and self.rng.random() < .6:
                self.plant(self.rng.choice(between), fill(self.rng, s["again"][0], fixed=v), evidence=False)
            self.distract(s["other"], s["pools"], [first, second], 1)
            self.ask("update", self.rng.choice(s["ask"]), [first, second])
            return True
        return False

    def preference(self):
        for s in self.free(PREFERENCES):
            parts = self.rng.sample(range(len(s["say"])), self.rng.randint(1, len(s["say"])))
            turns = []
            for i in parts:
                turn = self.pick([j for j in range(len(self.sessions)) if j + 1 not in [t.sid for t in turns]], s["domain"])
                if turn is None:
                    return False
                turns.append(turn)
            self.used_keys.append(s["key"])
            v = self.draw(s["pools"])
            for i, turn in zip(parts, turns):
                self.plant(turn, fill(self.rng, s["say"][i], fixed=v), fill(self.rng, s["echo"][i], fixed=v))
            self.ask("preference", self.rng.choice(s["ask"]), turns)
            return True
        return False

    def instruction(self):
        for s in self.free(INSTRUCTIONS):
            turn = self.pick(domain=s["domain"])
            if turn is None:
                return False
            self.used_keys.append(s["key"])
            v = self.draw(s["pools"])
            self.plant(turn, fill(self.rng, s["say"][0], fixed=v), fill(self.rng, s["echo"][0], fixed=v))
            self.ask("instruction", self.rng.choice(s["ask"]), [turn])
            return True
        return False

    def order(self):
        events = [e for e in EVENTS if e[1] not in self.used_keys]
        if len(events) < 2 or len(self.sessions) < 2:
            return False
        (a, a_name, a_echo), (b, b_name, b_echo) = self.rng.sample(events, 2)
        first = self.pick()
        second = self.pick([i for i in range(len(self.sessions)) if i + 1 != first.sid]) if first else None
        if second is None:
            return False
        self.used_keys += [a_name, b_name]
        self.plant(first, a, a_echo)
        self.plant(second, b, b_echo)
        x, y = self.rng.sample([a_name, b_name], 2)
        form = self.rng.choice(["Which happened first: {x} or {y}?", "Did {x} come before or after {y}?",
                                "What came earlier, {x} or {y}?"])
        self.ask("order", form.format(x=x, y=y), [first, second])
        return True

    def temporal(self):
        """One of three: when something started; news in the past week; a topic in a month."""
        for form in self.rng.sample(["start", "week", "month"], 3):
            if getattr(self, "temporal_" + form)():
                return True
        return False

    def temporal_start(self):
        starts = [s for s in STARTS if s[2] not in self.used_keys]
        n = len(self.sessions)
        turn = self.pick(range(0, max(1, n - 2))) if starts else None
        if turn is None:
            return False
        start, progress, question, echo = self.rng.choice(starts)
        self.used_keys.append(question)
        self.plant(turn, start, echo)
        later = self.user_turns(range(turn.sid, n), evidence=False)
        for other in self.rng.sample(later, min(2, len(later))):
            self.plant(other, fill(self.rng, progress[0]), evidence=False)
        self.ask("temporal", question, [turn])
        return True

    def temporal_week(self):
        edge = self.asked_at - dt.timedelta(days=7)
        inside = [i for i, s in enumerate(self.sessions) if s.date > edge]
        outside = [i for i, s in enumerate(self.sessions) if s.date < edge - dt.timedelta(days=1)]
        rels = [r for r in RELATIVES if r not in self.used_keys]
        turn = self.pick(inside) if rels and outside else None
        if turn is None:
            return False
        rel = self.rng.choice(rels)
        self.used_keys.append(rel)
        (now, echo), *earlier = self.rng.sample(NEWS, self.rng.randint(2, 3))
        self.plant(turn, now.format(rel=rel), echo)
        for said, reply in earlier:
            other = self.pick(outside, avoid=[turn])
            if other:
                self.plant(other, said.format(rel=rel), reply, evidence=False)
        form = self.rng.choice(["What did I tell you about my {rel} in the past week?",
                                "What news about my {rel} did I mention this past week?",
                                "Over the last seven days, what did I say about my {rel}?"])
        self.ask("temporal", form.format(rel=rel), [turn])
        return True

    def temporal_month(self):
        by_month = {}
        for i, s in enumerate(self.sessions):
            by_month.setdefault((s.date.year, s.date.month), []).append(i)
        topics = [t for t in MONTH_TOPICS if t[0] not in self.used_keys]
        if len(by_month) < 2 or not topics:
            return False
        key, pool, said, question = self.rng.choice(topics)
        months = self.rng.sample(sorted(by_month), min(3, len(by_month)))
        values = self.rng.sample([v for v in pool if v not in self.used_values], len(months))
        turns = [self.pick(by_month[m]) for m in months]
        if None in turns:
            return False
        self.used_keys.append(key)
        self.used_values.extend(values)
        for turn, v in zip(turns, values):
            self.plant(turn, said.format(v=v), f"Enjoy {v}.", evidence=turn is turns[0])
        self.ask("temporal", question.format(month=MONTHS[months[0][1] - 1]), [turns[0]])
        return True

    def relative(self):
        """What the user said on one side of a life event they told of, asked as "before I
        moved" / "after I quit the bank" (only with --relative)."""
        anchors = [a for a in ANCHORS if a[0] not in self.used_keys and not set(a[3]) & set(self.used_keys)]
        topics = [t for t in RELATIVE_TOPICS if t[0] not in self.used_keys]
        n = len(self.sessions)
        if not anchors or not topics or n < 6:
            return False
        said, event, echo, _ = self.rng.choice(anchors)
        key, pool, statement, question = self.rng.choice(topics)
        middle = self.pick(range(n // 3, 2 * n // 3))
        values = [v for v in pool if v not in self.used_values]
        if middle is None or len(values) < 3:
            return False
        side = self.rng.choice(["before", "after"])
        before, after = range(0, middle.sid - 1), range(middle.sid, n)
        inside, outside = (before, after) if side == "before" else (after, before)
        evidence = self.pick(inside, avoid=[middle])
        others = [self.pick(outside, avoid=[middle]) for _ in range(2)]
        if evidence is None or None in others or others[0] is others[1]:
            return False
        values = self.rng.sample(values, 3)
        self.used_keys += [said, key]
        self.used_values.extend(values)
        self.plant(middle, said, echo, evidence=False)
        self.plant(evidence, statement.format(v=values[0]), f"Enjoy {values[0]}.")
        for other, v in zip(others, values[1:]):
            self.plant(other, statement.format(v=v), f"Enjoy {v}.", evidence=False)
        self.ask("relative", question.format(side=side, event=event), [evidence])
        return True

    def multi(self):
        for s in self.free(MULTI):
            roomy = [i for i in range(len(self.sessions)) if self.user_turns([i])]
            if len(roomy) < 2:
                return False
            sids = self.rng.sample(roomy, min(self.rng.randint(2, 4), len(roomy)))
            turns = [self.pick([i], s["domain"]) for i in sids]
            self.used_keys.append(s["key"])
            for turn in turns:
                v = self.draw(s["pools"])
                self.plant(turn, fill(self.rng, self.rng.choice(s["say"]), fixed=v),
                           fill(self.rng, s["echo"][0], fixed=v), recall=True)
            self.distract(s["other"], s["pools"], turns, 1)
            self.ask("multi-session", self.rng.choice(s["ask"]), turns)
            return True
        return False


# ---------------------------------------------------------------------------------------
# Writing the turns.
# ---------------------------------------------------------------------------------------

def block(rng, title, line, words, room):
    """A list (fridge contents, a training log…) of about `room` characters, without
    repeating its first field (one line per ingredient) unless lines are numbered."""
    first = FIELD.search(line).group(1)
    lines, keys = [], []
    for i in range(60):
        if sum(map(len, lines)) >= room:
            break
        drawn = {"i": str(len(lines) + 1)}
        text = fill(rng, line, words, drawn)
        if drawn[first] not in keys:
            keys.append(drawn[first])
            lines.append(text)
    return title, lines


class Advice:
    """Sentences of advice for one answer (or one text the user pastes), none said twice:
    the domain's tips, its actions in the shared frames (each at most three times), and a
    few generic lines; on the request's subject more often than not."""

    def __init__(self, rng, d, subject):
        self.rng, self.d, self.subject = rng, d, subject
        self.tips = rng.sample(d["tips"], len(d["tips"]))
        self.acts = [a for _ in range(3) for a in rng.sample(d["acts"], len(d["acts"]))]
        self.generic = rng.sample(GENERIC, 5)
        self.frames = []

    def __iter__(self):
        return self

    def __next__(self):
        rng, r = self.rng, self.rng.random()
        fixed = dict(self.subject) if rng.random() < .6 else {}
        if self.tips and r < .3:
            text = fill(rng, self.tips.pop(), self.d["words"], fixed)
        elif self.generic and r < .45:
            text = self.generic.pop()
        elif len(self.acts) >= 2:
            self.frames = self.frames or rng.sample(FRAMES, len(FRAMES))
            frame = self.frames.pop()
            acts = {"act": [self.acts.pop()], "why": self.d["whys"]}
            if "{act2}" in frame:
                acts["act2"] = [self.acts.pop()]
            text = fill(rng, fill(rng, frame, acts), self.d["words"], fixed)
        elif self.tips or self.generic:
            text = fill(rng, (self.tips or self.generic).pop(), self.d["words"], fixed)
        else:
            raise StopIteration
        return text[0].upper() + text[1:]


def traceback_text(rng, code):
    """A Python traceback through a few of the user's files and the standard library."""
    files = ["main.py", "sync.py", "cli.py", "tasks/runner.py", "app/views.py", "utils.py", "report.py"]
    frames = [f'  File "/home/me/project/{rng.choice(files)}", line {rng.randrange(10, 400)}, in {rng.choice(code)[1].split(".")[-1]}\n'
              f"    result = {rng.choice(code)[1].split('.')[-1]}(data)" for _ in range(rng.randint(2, 5))]
    mod, name, _, _ = rng.choice(code)
    frames.append(f'  File "/usr/lib/python3.11/{mod.replace(".", "/")}.py", line {rng.randrange(50, 2000)}, in {name.split(".")[-1]}')
    error = rng.choice(["TypeError: expected str, bytes or os.PathLike object, not NoneType",
                        "ValueError: too many values to unpack (expected 2)", "KeyError: 'timestamp'",
                        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 41: invalid continuation byte",
                        "AttributeError: 'NoneType' object has no attribute 'group'",
                        "IndexError: list index out of range", "OSError: [Errno 24] Too many open files"])
    return "```\nTraceback (most recent call last):\n" + "\n".join(frames) + "\n" + error + "\n```"


def user_text(rng, turn, first_in_session, code):
    """A request with the planted sentences woven in, grown to a length drawn around 1,900
    characters (follow-ups shorter) with what real users add: detail, what they tried, advice
    they read somewhere, a pasted list or code."""
    subject = turn.subject
    target = int(min(3200, max(450, rng.gauss(2100 if first_in_session else 1500, 650))))
    lead = "" if first_in_session else rng.choice(FOLLOWUPS) + " "
    if turn.domain == "code":
        pick = rng.randrange(len(code))
        mod, name, _, src = code[pick]
        subject["code"] = pick
        cut = src[:max(300, target - 500)]
        head = (f"I'm working on {rng.choice(PROJECTS)} and {rng.choice(BUGS)}. This is the function "
                f"I based it on, `{name}` from `{mod}`:\n\n```python\n{cut[:cut.rfind(chr(10)) + 1]}```")
        d = {"details": CODE_DETAILS, "tips": CODE_TIPS, "words": {}}
        if len(head) < target - 400:
            head += "\n\nAnd this is what it prints:\n\n" + traceback_text(rng, code)
    else:
        d = DOMAINS[turn.domain]
        head = fill(rng, rng.choice(d["asks"]), d["words"], subject)
    body = [fill(rng, x, d["words"], dict(subject)) for x in rng.sample(d["details"], rng.randint(2, len(d["details"])))]
    for _ in range(rng.randint(0, 2) if "acts" in d else 0):
        act = fill(rng, rng.choice(USER_FRAMES), {"act": d["acts"]})
        body.insert(rng.randrange(len(body) + 1), fill(rng, act, d["words"], dict(subject)))
    if rng.random() < .5:
        body.insert(rng.randrange(len(body) + 1), rng.choice(LIFE))
    if rng.random() < .4:
        heard = fill(rng, rng.choice(d["tips"]), d["words"], dict(subject))
        body.append(rng.choice(["I read somewhere: \"{}\" Is that right?", "A friend told me: \"{}\" Does it hold up?",
                                "Everyone online says \"{}\" but it hasn't helped me."]).format(heard))
    for said in turn.said:
        lead_in = rng.choice(["", "", "Oh, and ", "For context: ", "Side note: ", "Also, "])
        body.insert(rng.randrange(len(body) + 1), lead_in + (lower_first(said) if lead_in else said))
    text = lead + head + "\n\n" + " ".join(body)
    if turn.domain != "code" and len(text) < target - 100 and rng.random() < .7:
        title, turn.listing = block(rng, *d["block"], d["words"], target - len(text))
        text += "\n\n" + title + "\n" + "\n".join(turn.listing)
    if turn.domain != "code" and len(text) < target - 300:     # users paste what they found elsewhere
        steps = []
        for step in Advice(rng, d, subject):
            if len(text) + sum(map(len, steps)) >= target or len(steps) == 14:
                break
            steps.append(step)
        text += "\n\n" + rng.choice(PASTED) + "\n\n" + "\n".join(f"{i}. {t}" for i, t in enumerate(steps, 1))
    return text + "\n\n" + rng.choice(["What would you suggest?", "Where should I start?", "Thoughts?",
                                        "Can you help?", "What am I missing?", "Thanks in advance."])


def assistant_text(rng, turn, code, asked):
    """A long, structured answer to the user turn `asked` (2,000–5,500 characters), opening
    with what the user just said and going through any list they pasted, as real assistants
    do."""
    target = int(min(5300, max(2000, rng.gauss(3700, 900))))
    parts, subject = [" ".join([rng.choice(INTROS)] + turn.echoes)], asked.subject
    if asked.listing and turn.domain != "language":     # remarks fit items and amounts, not words
        parts.append(rng.choice(["**Going through your list**", "**About what you sent**", "**Your list, annotated**"])
                     + "\n\n" + "\n".join(f"{line} ({fill(rng, rng.choice(REMARKS))})" for line in asked.listing))
    if turn.domain == "code":
        mod, name, doc, src = code[subject["code"]] if "code" in subject and rng.random() < .8 else rng.choice(code)
        related = [c for c in code if c[0] == mod and c[1] != name]
        cut = src[:1600]
        parts.append(f"### What `{mod}.{name}` does\n\n{doc[:1500]}")
        parts.append(f"### A version to start from\n\n```python\n{cut[:cut.rfind(chr(10)) + 1]}```")
        for _, other, odoc, _ in rng.sample(related, len(related)):
            if sum(map(len, parts)) > target - 600:
                break
            parts.append(f"### Related: `{other}`\n\n{odoc[:1000]}")
        parts.append("### Checklist\n\n" + "\n".join(f"{i}. {t}" for i, t in
                                                      enumerate(rng.sample(CODE_TIPS, 4), 1)))
    else:
        d = DOMAINS[turn.domain]
        heads, advice = rng.sample(d["heads"], len(d["heads"])), Advice(rng, d, subject)
        structured = rng.randrange(1, 4)      # which section is a plan or an email draft
        while sum(map(len, parts)) < target:
            head = heads.pop() if heads else rng.choice(["Also worth knowing", "One more thing", "In practice"])
            if len(parts) == structured and "plan" in d:
                title, lines = block(rng, *d["plan"], d["words"], rng.randrange(300, 900))
                parts.append(f"**{head}**\n\n{title}\n" + "\n".join(lines))
                continue
            if len(parts) == structured and turn.domain == "work":
                lines = rng.sample(d["words"]["line"], rng.randint(3, 5))
                parts.append(f"**{head}**\n\nSubject: {fill(rng, '{subject}', d['words'], dict(subject))}\n\n"
                             f"Hi {rng.choice(FIRST)},\n\n" + " ".join(lines) + "\n\nBest,\n[your name]")
                continue
            said = [t for t, _ in zip(advice, range(rng.randint(3, 6)))]
            if not said:
                break
            style = rng.random()
            if style < .35:
                body = "\n".join(f"{i}. {t}" for i, t in enumerate(said, 1))
            elif style < .6:
                body = "\n".join("- " + t for t in said)
            else:
                body = " ".join(said)
            parts.append(f"**{head}**\n\n{body}")
    return "\n\n".join(parts + [rng.choice(CLOSINGS)])


def paste_text(rng, turn, size):
    """A pasted log or CSV of about `size` bytes, with a short request around it."""
    money = DOMAINS["money"]["words"]
    levels = ["INFO"] * 6 + ["DEBUG"] * 3 + ["WARN", "ERROR"]
    paths = ["/api/items", "/api/users", "/healthz", "/api/sync", "/api/export", "/login"]

    def row(i):
        if turn.domain == "money":
            return (f"2025-{1 + i % 12:02d}-{1 + i % 28:02d},{rng.choice(money['merchant'])},"
                    f"{rng.choice(money['category'])},{rng.randrange(1, 40000) / 100:.2f}")
        if turn.domain == "fitness":
            return f"{i},{rng.randrange(95, 185)},{rng.randrange(240, 420)},{rng.randrange(150, 185)}"
        return (f"2026-01-{1 + i // 5000 % 28:02d}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}."
                f"{rng.randrange(1000):03d}Z {rng.choice(levels):5} worker-{rng.randrange(8)} "
                f"req={rng.getrandbits(32):08x} {rng.choice(['GET', 'POST', 'PUT'])} {rng.choice(paths)}/"
                f"{rng.randrange(10000)} {rng.choice([200] * 8 + [404, 500, 503])} {rng.randrange(1, 900)}ms")

    if turn.domain in ("money", "fitness"):
        intro = "Here's the full export, sorry it's huge. Can you spot anything odd?"
        lines = ["date,merchant,category,amount" if turn.domain == "money" else "second,heart_rate,pace_s_per_km,cadence"]
    else:
        intro = f"Here's the whole log from last night's run of {rng.choice(PROJECTS)}. Why does it keep restarting?"
        lines = []
    total = 0
    while total < size:
        lines.append(row(len(lines)))
        total += len(lines[-1]) + 1
    return intro + "\n\n```\n" + "\n".join(lines) + "\n```"


# ---------------------------------------------------------------------------------------
# A chat, the file, and the command line.
# ---------------------------------------------------------------------------------------

def make_chat(rng, cid, n_turns, n_questions, span_days, code, relative=0):
    sessions = lay_out(rng, n_turns, span_days)
    asked_at = (sessions[-1].date + dt.timedelta(days=rng.randint(1, 3))).replace(hour=10, minute=rng.randrange(60))
    user_turns = [t for s in sessions for t in s.turns if t.role == "user"]
    if n_turns > 100 and rng.random() < .6:           # pasted logs: before planting, so never evidence
        for turn in rng.sample(user_turns, rng.randint(1, 3)):
            turn.paste = rng.choice([rng.randrange(70_000, 200_000), rng.randrange(200_000, 350_000)])
            topic = turn.domain if turn.domain in ("money", "fitness") else "code"
            turn.domain = sessions[turn.sid - 1].turns[turn.n].domain = topic
    plan = Planner(rng, sessions, asked_at)
    counts = {kind: int(n_questions * share) for kind, share in KIND_SHARES}
    by_remainder = sorted(KIND_SHARES, key=lambda ks: n_questions * ks[1] % 1 + rng.random(), reverse=True)
    for kind, _ in by_remainder[:n_questions - sum(counts.values())]:
        counts[kind] += 1
    makers = {"fact": plan.fact, "update": plan.update, "preference": plan.preference,
              "instruction": plan.instruction, "order": plan.order, "temporal": plan.temporal,
              "multi-session": plan.multi}
    for kind, _ in KIND_SHARES:
        for _ in range(counts[kind]):
            makers[kind]()
    for _ in range(rng.randint(2, 4)):                # facts said but never asked about
        plan.fact(asked=False)
    for _ in range(relative):                         # after the rest: a seed's set is unchanged without
        plan.relative()
    for s in sessions:
        for turn in s.turns:
            if turn.paste:
                turn.text = paste_text(rng, turn, turn.paste)
            elif turn.role == "user":
                turn.text = user_text(rng, turn, turn.n == 1, code)
            else:
                turn.text = assistant_text(rng, turn, code, s.turns[turn.n - 2])
    rng.shuffle(plan.questions)
    return {"id": cid,
            "sessions": [{"date": iso(s.date), "turns": [{"id": t.id, "role": t.role, "text": t.text} for t in s.turns]}
                         for s in sessions],
            "questions": plan.questions}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="output JSON path, or - for stdout")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--chats", type=int, default=None, help="number of chats (default 12, or 2 with --small)")
    parser.add_argument("--small", action="store_true", help="2 chats of ~60 turns, ~10 questions each")
    def relative_count(text):
        n = int(text)
        if not 0 <= n <= len(ANCHORS):    # each event is told at most once a chat
            raise argparse.ArgumentTypeError(f"must be 0..={len(ANCHORS)}, got {n}")
        return n

    parser.add_argument("--relative", type=relative_count, default=0, metavar="N",
                        help="also N questions a chat about the time before or after a life event the "
                             "user told of (kind `relative`)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    code = load_stdlib()
    n_chats = args.chats or (2 if args.small else 12)
    chats = []
    for i in range(n_chats):
        if args.small:
            n_turns, span = 60, rng.randint(70, 100)
        else:   # spread evenly over 150–700, shuffled by the seed
            n_turns = 2 * round((150 + 550 * i / max(1, n_chats - 1) + rng.randint(-20, 20)) / 2)
            n_turns, span = max(150, min(700, n_turns)), rng.randint(100, 170)
        chats.append((n_turns, span))
    rng.shuffle(chats)
    data = {"format": "nightshift-chats", "version": 1, "seed": args.seed,
            "chats": [make_chat(rng, f"chat-{i:02d}", n, min(n // 6, 20 + n // 40), span, code, args.relative)
                      for i, (n, span) in enumerate(chats, 1)]}
    text = json.dumps(data, ensure_ascii=False)
    if args.out == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    turns = [t for c in data["chats"] for s in c["sessions"] for t in s["turns"]]
    kinds = {k: sum(q["kind"] == k for c in data["chats"] for q in c["questions"])
             for k in [k for k, _ in KIND_SHARES] + ["relative"] * bool(args.relative)}
    print(f"{len(data['chats'])} chats, {len(turns)} turns, {sum(kinds.values())} questions "
          f"({', '.join(f'{k} {v}' for k, v in kinds.items())}), "
          f"median user/assistant turn {statistics.median(len(t['text']) for t in turns if t['role'] == 'user'):.0f}/"
          f"{statistics.median(len(t['text']) for t in turns if t['role'] == 'assistant'):.0f} chars, "
          f"max turn {max(len(t['text'].encode()) for t in turns)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
