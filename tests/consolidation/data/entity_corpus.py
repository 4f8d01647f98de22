"""A labelled corpus of graph entities for consolidation's alias rules (docs/consolidation.md).

Each case is a few entities of one user, oldest first, as (name, type, known aliases),
and the truth: which entity merges into which (a later one into an earlier one), as
index pairs. ``SAME_NAME``: one name written two ways (case, spaces, punctuation,
accents, a leading "the"). ``KNOWN_ALIAS``: an entity whose known aliases hold the
other's name (or share an alias). ``RENAMED``: the same thing under another name with
no alias recorded (only an embedding or a judge can tell). ``DISTINCT``: entities that
must stay apart (another type, another person of a similar name, a part and its whole,
a short name that may or may not be the long one).
"""

from __future__ import annotations

Entity = tuple[str, str, tuple[str, ...]]

SAME_NAME: list[tuple[str, str, str]] = [
    ("New York City", "new york city", "location"),
    ("New York City", "New-York City", "location"),
    ("San Francisco", "san  francisco", "location"),
    ("São Paulo", "Sao Paulo", "location"),
    ("Zürich", "Zurich", "location"),
    ("Café Luna", "Cafe Luna", "organization"),
    ("Dr. Smith", "Dr Smith", "person"),
    ("O'Brien", "OBrien", "person"),
    ("Jean-Luc Picard", "Jean Luc Picard", "person"),
    ("AT&T", "AT and T", "organization"),
    ("The Beatles", "Beatles", "organization"),
    ("The Louvre", "Louvre", "location"),
    ("U.S.A.", "USA", "location"),
    ("Acme Corp.", "Acme Corp", "organization"),
    ("Acme, Inc.", "Acme Inc", "organization"),
    ("machine learning", "Machine-Learning", "concept"),
    ("e-mail", "email", "concept"),
    ("Wi-Fi", "WiFi", "concept"),
    ("T-shirt", "T shirt", "object"),
    ("Mount Everest", "mount everest!", "location"),
    ("Los Angeles", "LOS ANGELES", "location"),
    ("Stack Overflow", "Stack_Overflow", "organization"),
    ("Ana María", "Ana Maria", "person"),
    ("Bjørn", "BJØRN.", "person"),
    ("Project Apollo", "project apollo.", "event"),
    ("Hamburg", "  hamburg ", "location"),
    ("Côte d'Azur", "Cote dAzur", "location"),
    ("Rock 'n' Roll", "Rock n Roll", "concept"),
    ("St. Louis", "St Louis", "location"),
    ("J.K. Rowling", "JK Rowling", "person"),
    ("Coca-Cola", "Coca Cola", "organization"),
    ("Saint-Étienne", "Saint Etienne", "location"),
    ("Python (language)", "Python language", "concept"),
    ("Yoga class", "yoga-class", "event"),
    ("Mom", "mom", "person"),
]

KNOWN_ALIAS: list[tuple[Entity, Entity]] = [
    (("New York City", "location", ("NYC", "Big Apple")), ("NYC", "location", ())),
    (("New York City", "location", ("NYC",)), ("Big Apple", "location", ("nyc",))),
    (("Robert Smith", "person", ("Bob", "Bobby")), ("Bobby", "person", ())),
    (("Robert Smith", "person", ("Bob Smith",)), ("bob smith", "person", ())),
    (("International Business Machines", "organization", ("IBM",)), ("IBM", "organization", ())),
    (("United Kingdom", "location", ("UK", "Britain")), ("Britain", "location", ())),
    (("United Kingdom", "location", ("U.K.",)), ("UK", "location", ())),
    (
        ("Massachusetts Institute of Technology", "organization", ("MIT",)),
        ("MIT", "organization", ()),
    ),
    (("Elizabeth", "person", ("Liz", "Beth")), ("Liz", "person", ())),
    (("William", "person", ("Will", "Bill")), ("bill", "person", ())),
    (("Katherine", "person", ("Kate",)), ("Kathy", "person", ("kate",))),
    (("Los Angeles", "location", ("LA", "L.A.")), ("LA", "location", ())),
    (("San Francisco", "location", ("SF", "Frisco")), ("SF", "location", ())),
    (("Alphabet", "organization", ("Google",)), ("Google", "organization", ())),
    (("Meta", "organization", ("Facebook",)), ("facebook", "organization", ())),
    (("JavaScript", "concept", ("JS",)), ("js", "concept", ())),
    (("TypeScript", "concept", ("TS",)), ("ts", "concept", ("TypeScript lang",))),
    (("Mum", "person", ("Mother", "Mom")), ("mother", "person", ())),
    (("Dad", "person", ("Father",)), ("father", "person", ())),
    (("Grandma Rose", "person", ("Nana",)), ("Nana", "person", ())),
    (("Dr. Alice Chen", "person", ("Alice", "Dr. Chen")), ("Dr Chen", "person", ())),
    (("Acme Corporation", "organization", ("Acme",)), ("ACME", "organization", ())),
    (("World Health Organization", "organization", ("WHO",)), ("W.H.O.", "organization", ())),
    (("European Union", "location", ("EU",)), ("E.U.", "location", ())),
    (("Kubernetes", "concept", ("k8s",)), ("K8s", "concept", ())),
    (("PostgreSQL", "concept", ("Postgres",)), ("postgres", "concept", ())),
    (("Christmas", "event", ("Xmas",)), ("xmas", "event", ())),
    (("Saint Petersburg", "location", ("St Petersburg",)), ("St. Petersburg", "location", ())),
    (("Mumbai", "location", ("Bombay",)), ("Bombay", "location", ())),
    (("Beijing", "location", ("Peking",)), ("peking", "location", ())),
    (("Thomas", "person", ("Tom",)), ("Tom", "person", ("Tommy",))),
    (("Margaret", "person", ("Maggie", "Peggy")), ("Peggy", "person", ())),
    (("Twitter", "organization", ("X",)), ("X", "organization", ("Twitter Inc",))),
    (("Amsterdam Schiphol", "location", ("Schiphol",)), ("Schiphol", "location", ())),
    (("Manhattan Project", "event", ()), ("The Manhattan Project", "event", ("MP",))),
]

RENAMED: list[tuple[str, str, str]] = [
    ("New York City", "NYC", "location"),
    ("United States", "United States of America", "location"),
    ("Robert", "Bob", "person"),
    ("Los Angeles", "LA", "location"),
    ("automobile", "car", "object"),
    ("International Business Machines", "IBM", "organization"),
    ("Federal Bureau of Investigation", "FBI", "organization"),
    ("physician", "doctor", "concept"),
]

DISTINCT: list[tuple[Entity, Entity]] = [
    (("Paris", "location", ()), ("Paris", "person", ())),
    (("Paris", "location", ()), ("Paris, Texas", "location", ())),
    (("Mr Smith", "person", ()), ("Mrs Smith", "person", ())),
    (("John Smith", "person", ()), ("Jane Smith", "person", ())),
    (("John Smith", "person", ()), ("John Smyth", "person", ())),
    (("Bob", "person", ()), ("Bob Smith", "person", ())),
    (("Alice", "person", ()), ("Alice Chen", "person", ())),
    (("Apple", "organization", ()), ("Apple", "object", ())),
    (("Apple", "organization", ()), ("Apple Music", "organization", ())),
    (("Java", "concept", ()), ("JavaScript", "concept", ())),
    (("Java", "location", ()), ("Java", "concept", ())),
    (("Georgia", "location", ("GA",)), ("Georgia", "person", ())),
    (("Washington", "location", ()), ("Washington", "person", ())),
    (("Washington", "location", ()), ("Washington D.C.", "location", ())),
    (("York", "location", ()), ("New York", "location", ())),
    (("Amazon", "organization", ()), ("Amazon", "location", ())),
    (("Jordan", "person", ()), ("Jordan", "location", ())),
    (("Python", "concept", ()), ("Python 2", "concept", ())),
    (("Python 2", "concept", ()), ("Python 3", "concept", ())),
    (("iPhone 14", "object", ()), ("iPhone 15", "object", ())),
    (("World War I", "event", ()), ("World War II", "event", ())),
    (("Sam", "person", ("Samuel",)), ("Samantha", "person", ("Sam2",))),
    (("Chris", "person", ()), ("Christine", "person", ())),
    (("Anna", "person", ()), ("Hanna", "person", ())),
    (("Mark", "person", ()), ("Marc", "person", ())),
    (
        ("Berlin", "location", ()),
        ("Bern", "location", ()),
    ),
    (("Austria", "location", ()), ("Australia", "location", ())),
    (("Sweden", "location", ()), ("Switzerland", "location", ())),
    (("Google", "organization", ()), ("Google Maps", "object", ())),
    (("Tesla", "organization", ()), ("Nikola Tesla", "person", ())),
    (("Ford", "organization", ()), ("Harrison Ford", "person", ())),
    (("Mercury", "location", ()), ("Mercury", "concept", ())),
    (("Lincoln", "person", ()), ("Lincoln", "location", ())),
    (("Acme Corp", "organization", ()), ("Acme Labs", "organization", ())),
    (("Oxford", "location", ()), ("Oxford University", "organization", ())),
    (("Cambridge", "location", ()), ("Cambridge, MA", "location", ())),
    (("Birthday party", "event", ()), ("Wedding party", "event", ())),
    (("Dr. Chen", "person", ()), ("Dr. Cheng", "person", ())),
    (("Mum", "person", ()), ("Dad", "person", ())),
    (("Monday meeting", "event", ()), ("Tuesday meeting", "event", ())),
    (("Room 101", "location", ()), ("Room 102", "location", ())),
    (("Bus 42", "object", ()), ("Bus 24", "object", ())),
    (("Red team", "organization", ()), ("Blue team", "organization", ())),
    (("North Korea", "location", ()), ("South Korea", "location", ())),
    (("Kate", "person", ("Katie",)), ("Katherine Lee", "person", ("K. Lee",))),
    (("C", "concept", ()), ("C++", "concept", ())),
    (("C#", "concept", ()), ("C", "concept", ())),
    (("F#", "concept", ()), ("F", "concept", ())),
]

#: Cases of three or more entities: (entities oldest first, merges as (newer, older)).
GROUPS: list[tuple[list[Entity], list[tuple[int, int]]]] = [
    (
        [
            ("New York City", "location", ("NYC",)),
            ("nyc", "location", ()),
            ("New-York City!", "location", ()),
            ("Paris", "location", ()),
        ],
        [(1, 0), (2, 0)],
    ),
    (
        [
            ("Robert Smith", "person", ("Bob",)),
            ("Bob", "person", ()),
            ("Bob Jones", "person", ()),
            ("robert smith", "person", ()),
        ],
        [(1, 0), (3, 0)],
    ),
    (
        [
            ("Acme", "organization", ()),
            ("ACME", "organization", ()),
            ("Acme", "location", ()),
            ("Acme Labs", "organization", ()),
        ],
        [(1, 0)],
    ),
    (
        [
            ("Mom", "person", ("Mother",)),
            ("Dad", "person", ("Father",)),
            ("mother", "person", ()),
            ("father", "person", ()),
        ],
        [(2, 0), (3, 1)],
    ),
    (
        [
            ("Berlin", "location", ()),
            ("Berlin!", "location", ()),
            ("Bern", "location", ()),
            ("bern.", "location", ()),
        ],
        [(1, 0), (3, 2)],
    ),
]


def cases() -> list[tuple[str, list[Entity], list[tuple[int, int]]]]:
    """Every case as (name, entities oldest first, expected merges (newer, older))."""
    out: list[tuple[str, list[Entity], list[tuple[int, int]]]] = []
    for n, (a, b, kind) in enumerate(SAME_NAME):
        out.append((f"same_name-{n}", [(a, kind, ()), (b, kind, ())], [(1, 0)]))
    for n, (first, second) in enumerate(KNOWN_ALIAS):
        out.append((f"known_alias-{n}", [first, second], [(1, 0)]))
    for n, (a, b, kind) in enumerate(RENAMED):
        out.append((f"renamed-{n}", [(a, kind, ()), (b, kind, ())], [(1, 0)]))
    for n, (first, second) in enumerate(DISTINCT):
        out.append((f"entity_distinct-{n}", [first, second], []))
    for n, (entities, merges) in enumerate(GROUPS):
        out.append((f"entity_group-{n}", entities, merges))
    return out
