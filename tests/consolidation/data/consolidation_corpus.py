"""A labelled consolidation corpus of our own making (see docs/consolidation.md).

Each case is a few facts of one user, oldest first, and the truth: which fact a correct
consolidation retires into which, and why. ``DUPLICATES``: two phrasings of one fact (the
second merges into the first). ``CONTRADICTIONS``: a value and a later one of the same
attribute (the first is superseded by the second). ``DISTINCT``: two facts that must both
stay (related, near-identical with another number, negated, about someone else, or two
values of an attribute that has many). ``TIMED``: facts with ``said_at``/``valid_at``
metadata whose outcome depends on time.
"""

from __future__ import annotations

DUPLICATES: list[tuple[str, str]] = [
    ("User lives in Paris", "The user lives in Paris."),
    ("User lives in Paris", "I live in Paris"),
    ("User lives in Paris", "user lives in paris!"),
    ("User works at Acme Corp", "The user works at Acme Corp."),
    ("User works at Acme Corp", "I work for Acme Corp"),
    ("User works at Acme Corp", "User is employed at Acme Corp"),
    ("User's favorite color is blue", "My favourite color is blue"),
    ("User's favorite food is sushi", "The user's favorite food is sushi."),
    ("User's name is Maria", "My name is Maria"),
    ("User is 34 years old", "I am 34 years old"),
    ("User is 34 years old", "User's age is 34"),
    ("User's birthday is March 3", "My birthday is March 3"),
    ("User works as a nurse", "User's job is nurse"),
    ("User's partner is Sam", "My partner is Sam"),
    ("Alice lives in Berlin", "Alice lives in Berlin."),
    ("Alice works at Globex", "Alice works for Globex"),
    ("Bob's favorite sport is tennis", "Bob's favourite sport is tennis"),
    ("User is allergic to peanuts", "The user is allergic to peanuts."),
    ("User is allergic to peanuts", "user is allergic to peanuts"),
    ("User has a dog named Rex", "The user has a dog named Rex."),
    ("User has a dog named Rex", "User has a dog called Rex"),
    ("User prefers window seats on flights", "User prefers window seats on flights."),
    ("User prefers window seats on flights", "The user prefers a window seat on flights"),
    ("User is vegetarian", "The user is vegetarian."),
    ("User is vegetarian", "user is a vegetarian"),
    ("User drinks coffee every morning", "The user drinks coffee every morning."),
    ("User drinks coffee every morning", "Every morning the user drinks coffee"),
    ("User speaks Spanish fluently", "The user speaks fluent Spanish"),
    ("User speaks Spanish fluently", "User speaks Spanish fluently."),
    ("User plays the guitar", "The user plays guitar"),
    ("User plays the guitar", "User plays the guitar."),
    ("User runs marathons", "The user runs marathons"),
    ("User's daughter is named Lily", "The user's daughter is named Lily."),
    ("User's daughter is named Lily", "User has a daughter named Lily"),
    ("User's son goes to Lincoln High School", "The user's son attends Lincoln High School"),
    ("User likes science fiction novels", "The user likes science fiction novels."),
    ("User likes science fiction novels", "User likes sci-fi novels and science fiction"),
    ("User is learning Japanese", "The user is learning Japanese."),
    ("User is learning Japanese", "User is currently learning Japanese"),
    ("User has two cats", "The user has two cats."),
    ("User has two cats", "User owns two cats"),
    ("User wakes up at 6 am", "The user wakes up at 6 am."),
    ("User wakes up at 6 am", "User usually wakes up at 6 am"),
    ("User drives a Toyota Corolla", "The user drives a Toyota Corolla."),
    ("User drives a Toyota Corolla", "User's car is a Toyota Corolla and user drives it"),
    ("User's email is maria@example.com", "The user's email is maria@example.com"),
    ("User's phone number is 555 0101", "The user's phone number is 555 0101."),
    ("User supports Arsenal", "The user supports Arsenal football club"),
    ("User supports Arsenal", "User supports Arsenal."),
    ("User is a software engineer", "The user is a software engineer."),
    ("User is a software engineer", "User works as a software engineer"),
    ("User graduated from MIT", "The user graduated from MIT."),
    ("User graduated from MIT", "User is a graduate of MIT"),
    ("User does not eat pork", "The user does not eat pork."),
    ("User does not eat pork", "User doesn't eat pork"),
    ("User hates cilantro", "The user hates cilantro."),
    ("User is training for a half marathon", "The user is training for a half marathon."),
    ("User's mother lives in Lisbon", "The user's mother lives in Lisbon."),
    ("User volunteers at the animal shelter", "The user volunteers at an animal shelter"),
    ("User volunteers at the animal shelter", "User volunteers at the animal shelter."),
    ("User meditates every evening", "The user meditates every evening."),
    ("User meditates every evening", "Every evening the user meditates"),
    ("User prefers email over phone calls", "The user prefers email over phone calls."),
    ("User prefers email over phone calls", "User prefers emails to phone calls"),
    ("User is planning a trip to Japan in April", "The user plans a trip to Japan in April"),
    ("User is planning a trip to Japan in April", "User is planning a trip to Japan in April."),
    ("User's budget for the trip is 3000 dollars", "The user's trip budget is 3000 dollars"),
    ("User takes the train to work", "The user takes the train to work."),
    ("User takes the train to work", "User commutes to work by train and takes the train"),
    ("User is left-handed", "The user is left handed"),
    ("User collects vinyl records", "The user collects vinyl records."),
    ("User collects vinyl records", "User collects records on vinyl"),
    ("User's favorite movie is Alien", "My favorite movie is Alien"),
    ("User's favorite book is Dune", "The user's favourite book is Dune"),
    ("User grew up in Chicago", "The user grew up in Chicago."),
    ("User has a peanut allergy", "User has a peanut allergy."),
    ("User reads the news every morning", "The user reads the news every morning."),
    ("User is saving for a house", "The user is saving money for a house"),
    ("User is saving for a house", "User is saving for a house."),
    ("User lives in New York", "I live in New York."),
]

CONTRADICTIONS: list[tuple[str, str]] = [
    ("User lives in Paris", "User lives in Berlin"),
    ("User lives in Paris", "I live in Madrid now"),
    ("User lives in Boston", "The user moved to Denver"),
    ("User lives in Boston", "User has moved to Seattle"),
    ("User lives in Rome", "User's home is Naples"),
    ("I live in London", "I live in Dublin"),
    ("Alice lives in Berlin", "Alice lives in Hamburg"),
    ("Alice lives in Berlin", "Alice moved to Munich"),
    ("Bob lives in Oslo", "Bob lives in Bergen"),
    ("User works at Acme Corp", "User works at Globex"),
    ("User works at Acme Corp", "I work for Initech now"),
    ("User works at Google", "User is employed at Microsoft"),
    ("User works for the city council", "User works at a bakery"),
    ("Alice works at Globex", "Alice works at Umbrella"),
    ("Bob works at Hooli", "Bob works for Pied Piper"),
    ("User's employer is Acme", "User's employer is Stark Industries"),
    ("User's favorite color is blue", "User's favorite color is green"),
    ("User's favorite color is red", "My favorite color is purple"),
    ("User's favorite food is sushi", "User's favorite food is pizza"),
    ("User's favorite food is tacos", "The user's favourite food is ramen"),
    ("User's favorite movie is Alien", "User's favorite movie is Heat"),
    ("User's favorite book is Dune", "User's favorite book is Emma"),
    ("User's favorite sport is tennis", "User's favorite sport is golf"),
    ("User's favorite band is Queen", "User's favorite band is Muse"),
    ("User's favorite season is winter", "User's favorite season is autumn"),
    ("User's favorite drink is tea", "User's favorite drink is lemonade"),
    ("Bob's favorite sport is tennis", "Bob's favorite sport is squash"),
    ("User is 34 years old", "User is 35 years old"),
    ("I am 29", "I am 30 years old"),
    ("User's age is 41", "User's age is 42"),
    ("Alice is 52 years old", "Alice is 53 years old"),
    ("User's name is Maria", "User's name is Marie"),
    ("My name is Robert", "My name is Bob"),
    ("User is called Kate", "User is called Katherine"),
    ("User's birthday is March 3", "User's birthday is March 13"),
    ("My birthday is June 1", "My birthday is July 1"),
    ("User's job is nurse", "User's job is doctor"),
    ("User works as a teacher", "User works as a principal"),
    ("User's occupation is accountant", "User's occupation is consultant"),
    ("User's profession is lawyer", "User's profession is judge"),
    ("User's partner is Sam", "User's partner is Alex"),
    ("My wife is Julia", "My wife is Anna"),
    ("User's husband is Tom", "User's husband is Mark"),
    ("User's hometown is Leeds", "User's hometown is York"),
    ("User lives in Austin", "User is living in Dallas"),
    ("User resides in Vienna", "User resides in Graz"),
    ("User lives in Kyoto", "User relocated to Osaka"),
    ("User works at Spotify", "User now works at Netflix"),
    ("User works at Shell", "User currently works at BP"),
    ("User's favorite fruit is mango", "User's favorite fruit is kiwi"),
    ("User's favorite city is Prague", "User's favorite city is Lisbon"),
    ("User's favorite game is chess", "User's favorite game is go"),
    ("User's favorite animal is the owl", "User's favorite animal is the fox"),
    ("User's favorite language is Python", "User's favorite language is Rust"),
    ("User's favorite cuisine is Thai", "User's favorite cuisine is Korean"),
    ("User's favorite holiday is Christmas", "User's favorite holiday is Halloween"),
    ("Carol lives in Lima", "Carol lives in Quito"),
    ("Carol works at Oracle", "Carol works at SAP"),
    ("Dan's favorite color is yellow", "Dan's favorite color is orange"),
    ("Dan is 19 years old", "Dan is 20 years old"),
    ("User's favorite movie is Alien", "User's favorite movie is Aliens"),
    ("User's favorite number is 7", "User's favorite number is 8"),
]

DISTINCT: list[tuple[str, str]] = [
    ("User lives in Paris", "User's mother lives in Paris"),
    ("User lives in Paris", "Alice lives in Paris"),
    ("User lives in Paris", "User lives in Paris, Texas, since 2019"),
    ("User works at Acme Corp", "User's sister works at Acme Corp"),
    ("User works at Acme Corp", "Bob works at Acme Corp"),
    ("User is 34 years old", "User is 43 years old on paper"),
    ("User has two cats", "User has three cats"),
    ("User has two cats", "User has two dogs"),
    ("User likes tea", "User likes coffee"),
    ("User likes tea", "User does not like tea"),
    ("User likes jazz", "User dislikes jazz"),
    ("User eats meat", "User never eats meat"),
    ("User plays the guitar", "User plays the piano"),
    ("User plays the guitar", "User's son plays the guitar"),
    ("User speaks Spanish", "User speaks French"),
    ("User speaks Spanish", "User is learning Spanish"),
    ("User is allergic to peanuts", "User is allergic to shellfish"),
    ("User is allergic to peanuts", "User's daughter is allergic to peanuts"),
    ("User wakes up at 6 am", "User wakes up at 7 am"),
    ("User wakes up at 6 am", "User goes to bed at 6 am on weekends"),
    ("User runs 5 km every day", "User runs 10 km every day"),
    ("User's budget is 3000 dollars", "User's budget is 300 dollars"),
    ("User's flight is on May 5", "User's flight is on May 15"),
    ("User has a meeting on Monday at 10", "User has a meeting on Monday at 11"),
    ("User's daughter is named Lily", "User's daughter is named Rose"),
    ("User's daughter is named Lily", "User's niece is named Lily"),
    ("User has a dog named Rex", "User has a cat named Rex"),
    ("User has a dog named Rex", "User's neighbor has a dog named Rex"),
    ("User drives a Toyota Corolla", "User drives a Honda Civic"),
    ("User drives a Toyota Corolla", "User's wife drives a Toyota Corolla"),
    ("User supports Arsenal", "User supports Chelsea"),
    ("User is a software engineer", "User is a civil engineer"),
    ("User is a software engineer", "User's brother is a software engineer"),
    ("User graduated from MIT", "User graduated from Stanford"),
    ("User graduated from MIT in 2015", "User graduated from MIT in 2019"),
    ("User is vegetarian", "User is vegan"),
    ("User is vegetarian", "User is not vegetarian"),
    ("User drinks coffee every morning", "User drinks tea every morning"),
    ("User drinks coffee every morning", "User drinks coffee every evening"),
    ("User is learning Japanese", "User is learning Korean"),
    ("User is learning Japanese", "User teaches Japanese"),
    ("User visited Rome in 2019", "User visited Rome in 2022"),
    ("User visited Rome", "User visited Milan"),
    ("User's favorite color is blue", "User's car is blue"),
    ("User's favorite color is blue", "Alice's favorite color is blue"),
    ("User's favorite food is sushi", "User's favorite drink is sake"),
    ("User's name is Maria", "User's mother's name is Maria"),
    ("User's name is Maria", "User's dog's name is Maria"),
    ("User works as a nurse", "User worked as a nurse before 2010"),
    ("User likes hiking", "User likes hiking in winter only"),
    ("User likes hiking", "User likes swimming"),
    ("User reads every night", "User reads every morning"),
    ("User collects vinyl records", "User sells vinyl records"),
    ("User collects stamps", "User collects coins"),
    ("User is saving for a house", "User is saving for a car"),
    ("User is planning a trip to Japan", "User is planning a trip to Peru"),
    ("User is planning a trip to Japan in April", "User is planning a trip to Japan in October"),
    ("User prefers window seats", "User prefers aisle seats"),
    ("User prefers email", "User prefers phone calls"),
    ("User takes the train to work", "User takes the bus to work"),
    ("User has a peanut allergy", "User has a pollen allergy"),
    ("User has 1 brother", "User has 2 brothers"),
    ("User's rent is 1200 euros", "User's rent is 1500 euros"),
    ("User's son is 7", "User's son is 9"),
    ("User meditates every evening", "User meditates every morning"),
    ("User volunteers at the animal shelter", "User volunteers at the food bank"),
    ("User's favorite movie is Alien", "User's favourite movie is Alien, and Aliens too"),
    ("User watched Alien yesterday", "User watched Heat yesterday"),
    ("User owns a bakery", "User owns a bicycle"),
    ("User's password hint is blue", "User's favorite color is blue"),
    ("User bought a new laptop", "User bought a new phone"),
    ("User is married", "User is not married"),
    ("User has children", "User has no children"),
    ("User can swim", "User cannot swim"),
    ("User is 34 years old", "User's wife is 34 years old"),
    ("User lives in Paris", "User works in Paris"),
    ("User works at Acme Corp", "User worked at Acme Corp in 2010"),
    ("User likes Python", "User likes Python and Rust"),
    ("User lives on the 3rd floor", "User lives on the 5th floor"),
    ("User's lucky number is 7", "User's house number is 7"),
]

#: ``(facts, expected)``: each fact ``(content, metadata)`` in the order stored; expected
#: ``[(retired index, kept index, reason)]``.
TIMED: list[tuple[list[tuple[str, dict[str, str]]], list[tuple[int, int, str]]]] = [
    (  # said later wins
        [
            (
                "User lives in Paris",
                {
                    "subject": "user",
                    "attribute": "lives_in",
                    "value": "Paris",
                    "said_at": "2024-01-01",
                },
            ),
            (
                "User lives in Rome",
                {
                    "subject": "user",
                    "attribute": "lives_in",
                    "value": "Rome",
                    "said_at": "2024-06-01",
                },
            ),
        ],
        [(0, 1, "contradiction")],
    ),
    (  # stored later but said earlier: the value said last wins
        [
            (
                "User lives in Rome",
                {
                    "subject": "user",
                    "attribute": "lives_in",
                    "value": "Rome",
                    "said_at": "2024-06-01",
                },
            ),
            (
                "User lives in Paris",
                {
                    "subject": "user",
                    "attribute": "lives_in",
                    "value": "Paris",
                    "said_at": "2024-01-01",
                },
            ),
        ],
        [(1, 0, "contradiction")],
    ),
    (  # said earlier, valid later: it wins over what was said in between
        [
            (
                "User will work at Globex from May",
                {
                    "subject": "user",
                    "attribute": "works_at",
                    "value": "Globex",
                    "said_at": "2024-01-01",
                    "valid_at": "2024-05-01",
                },
            ),
            (
                "User works at Acme",
                {
                    "subject": "user",
                    "attribute": "works_at",
                    "value": "Acme",
                    "said_at": "2024-03-01",
                },
            ),
        ],
        [(1, 0, "contradiction")],
    ),
    (  # valid only in the future: left alone
        [
            (
                "User works at Acme",
                {
                    "subject": "user",
                    "attribute": "works_at",
                    "value": "Acme",
                    "said_at": "2024-03-01",
                },
            ),
            (
                "User will work at Globex in 2099",
                {
                    "subject": "user",
                    "attribute": "works_at",
                    "value": "Globex",
                    "said_at": "2024-04-01",
                    "valid_at": "2099-01-01",
                },
            ),
        ],
        [],
    ),
    (  # the same value said twice: one merged into the other
        [
            (
                "User's diet is vegan",
                {"subject": "user", "attribute": "diet", "value": "vegan", "said_at": "2024-01-01"},
            ),
            (
                "User eats vegan",
                {"subject": "User", "attribute": "Diet", "value": "Vegan", "said_at": "2024-02-01"},
            ),
        ],
        [(1, 0, "duplicate")],
    ),
    (  # three values over time: the last wins, both earlier are superseded
        [
            (
                "User lives in Oslo",
                {
                    "subject": "user",
                    "attribute": "lives_in",
                    "value": "Oslo",
                    "said_at": "2023-01-01",
                },
            ),
            (
                "User lives in Bergen",
                {
                    "subject": "user",
                    "attribute": "lives_in",
                    "value": "Bergen",
                    "said_at": "2023-06-01",
                },
            ),
            (
                "User lives in Tromso",
                {
                    "subject": "user",
                    "attribute": "lives_in",
                    "value": "Tromso",
                    "said_at": "2024-01-01",
                },
            ),
        ],
        [(0, 2, "contradiction"), (1, 2, "contradiction")],
    ),
    (  # different subjects never contradict
        [
            (
                "Alice lives in Oslo",
                {
                    "subject": "Alice",
                    "attribute": "lives_in",
                    "value": "Oslo",
                    "said_at": "2023-01-01",
                },
            ),
            (
                "Bob lives in Bergen",
                {
                    "subject": "Bob",
                    "attribute": "lives_in",
                    "value": "Bergen",
                    "said_at": "2024-01-01",
                },
            ),
        ],
        [],
    ),
    (  # different attributes never contradict
        [
            (
                "User lives in Oslo",
                {
                    "subject": "user",
                    "attribute": "lives_in",
                    "value": "Oslo",
                    "said_at": "2023-01-01",
                },
            ),
            (
                "User works in Bergen",
                {
                    "subject": "user",
                    "attribute": "works_in",
                    "value": "Bergen",
                    "said_at": "2024-01-01",
                },
            ),
        ],
        [],
    ),
    (  # a later value without metadata, stored later, still wins by storage time
        [
            ("User's favorite color is red", {}),
            ("User's favorite color is teal", {}),
        ],
        [(0, 1, "contradiction")],
    ),
    (  # metadata slot and sentence slot agree on the same attribute
        [
            (
                "User lives in Paris",
                {
                    "subject": "user",
                    "attribute": "lives_in",
                    "value": "Paris",
                    "said_at": "2020-01-01",
                },
            ),
            ("I live in Lyon", {}),
        ],
        [(0, 1, "contradiction")],
    ),
]


def cases() -> list[tuple[str, list[tuple[str, dict[str, str]]], list[tuple[int, int, str]]]]:
    """Every case as ``(name, facts, expected)``, in the ``TIMED`` form."""
    out: list[tuple[str, list[tuple[str, dict[str, str]]], list[tuple[int, int, str]]]] = []
    for n, (a, b) in enumerate(DUPLICATES):
        out.append((f"duplicate-{n}", [(a, {}), (b, {})], [(1, 0, "duplicate")]))
    for n, (a, b) in enumerate(CONTRADICTIONS):
        out.append((f"contradiction-{n}", [(a, {}), (b, {})], [(0, 1, "contradiction")]))
    for n, (a, b) in enumerate(DISTINCT):
        out.append((f"distinct-{n}", [(a, {}), (b, {})], []))
    for n, (facts, expected) in enumerate(TIMED):
        out.append((f"timed-{n}", facts, expected))
    return out
