"""Writes cache_pairs.json: the labelled cache evaluation set (run once; the JSON is committed)."""

import json
from pathlib import Path

# (question, paraphrase, [(near miss, kind), ...]); kinds: entity, number, negation, time, noun
ROWS = [
    (
        "How do I reset my password?",
        "How can I reset my password?",
        [("How do I reset my username?", "noun"), ("How do I reset my password on Windows?", "entity")],
    ),
    (
        "What is the function of money?",
        "What function does money serve?",
        [("What is the function of a TV?", "noun"), ("What is the function of the kidneys?", "noun")],
    ),
    (
        "How do I install Python on Ubuntu?",
        "What's the way to install Python on Ubuntu?",
        [("How do I install Python on Windows?", "entity"), ("How do I uninstall Python on Ubuntu?", "noun")],
    ),
    (
        "How many days are in a leap year?",
        "How many days does a leap year have?",
        [("How many days are in a normal year?", "noun"), ("How many hours are in a leap year?", "noun")],
    ),
    (
        "What is the capital of France?",
        "What's the capital of France?",
        [("What is the capital of Germany?", "entity"), ("What is the capital of Spain?", "entity")],
    ),
    (
        "How do I persist a Chroma collection?",
        "How can I persist a Chroma collection?",
        [("How do I delete a Chroma collection?", "noun"), ("How do I persist a Qdrant collection?", "entity")],
    ),
    (
        "Is it safe to take 2 aspirin?",
        "Is taking 2 aspirin safe?",
        [("Is it safe to take 5 aspirin?", "number"), ("Is it not safe to take 2 aspirin?", "negation")],
    ),
    (
        "How do I convert 100 dollars to euros?",
        "How can I convert 100 dollars into euros?",
        [("How do I convert 200 dollars to euros?", "number"), ("How do I convert 100 dollars to yen?", "noun")],
    ),
    (
        "What does HTTP status 404 mean?",
        "What is the meaning of HTTP status 404?",
        [("What does HTTP status 500 mean?", "number"), ("What does HTTP status 403 mean?", "number")],
    ),
    (
        "How do I sort a list in Python?",
        "How can I sort a list in Python?",
        [("How do I sort a dictionary in Python?", "noun"), ("How do I sort a list in JavaScript?", "entity")],
    ),
    (
        "Which database did we choose for analytics?",
        "Which database did we pick for analytics?",
        [
            ("Which database did we not choose for analytics?", "negation"),
            ("Which database did we choose for billing?", "noun"),
        ],
    ),
    (
        "What time does the Berlin office open?",
        "When does the Berlin office open?",
        [("What time does the Paris office open?", "entity"), ("What time does the Berlin office close?", "noun")],
    ),
    (
        "How do I cancel my subscription?",
        "How can I cancel my subscription?",
        [("How do I pause my subscription?", "noun"), ("How do I cancel my order?", "noun")],
    ),
    (
        "What is the boiling point of water?",
        "What's the boiling point of water?",
        [("What is the freezing point of water?", "noun"), ("What is the boiling point of ethanol?", "noun")],
    ),
    (
        "How do I center a div in CSS?",
        "How can I center a div with CSS?",
        [("How do I center an image in CSS?", "noun"), ("How do I not center a div in CSS?", "negation")],
    ),
    (
        "Who wrote Pride and Prejudice?",
        "Who is the author of Pride and Prejudice?",
        [("Who wrote Sense and Sensibility?", "entity"), ("Who wrote War and Peace?", "entity")],
    ),
    (
        "What is the population of Canada?",
        "What's the population of Canada?",
        [("What is the population of Mexico?", "entity"), ("What is the area of Canada?", "noun")],
    ),
    (
        "How do I make a sourdough starter?",
        "How can I make a sourdough starter?",
        [("How do I make a yogurt starter?", "noun"), ("How do I feed a sourdough starter?", "noun")],
    ),
    (
        "What port does Postgres listen on?",
        "Which port does Postgres listen on?",
        [("What port does Redis listen on?", "entity"), ("What port does MySQL listen on?", "entity")],
    ),
    (
        "How long should I boil an egg?",
        "How long do I boil an egg?",
        [("How long should I boil pasta?", "noun"), ("How long should I fry an egg?", "noun")],
    ),
    (
        "Can I bring 3 bags on the plane?",
        "Am I allowed to bring 3 bags on the plane?",
        [("Can I bring 2 bags on the plane?", "number"), ("Can I bring 3 bags on the train?", "noun")],
    ),
    (
        "What is the difference between TCP and UDP?",
        "What's the difference between TCP and UDP?",
        [
            ("What is the difference between HTTP and HTTPS?", "entity"),
            ("What is the difference between TCP and IP?", "entity"),
        ],
    ),
    (
        "How do I undo the last git commit?",
        "How can I undo the last git commit?",
        [("How do I undo the last 3 git commits?", "number"), ("How do I amend the last git commit?", "noun")],
    ),
    (
        "Why is my Docker container restarting?",
        "Why does my Docker container keep restarting?",
        [
            ("Why is my Docker container not restarting?", "negation"),
            ("Why is my Kubernetes pod restarting?", "entity"),
        ],
    ),
    (
        "How do I export my contacts?",
        "How can I export my contacts?",
        [("How do I import my contacts?", "noun"), ("How do I export my calendar?", "noun")],
    ),
    (
        "What are the symptoms of the flu?",
        "What symptoms does the flu cause?",
        [("What are the symptoms of a cold?", "noun"), ("What are the causes of the flu?", "noun")],
    ),
    (
        "How much water should I drink per day?",
        "How much water should I drink each day?",
        [("How much coffee should I drink per day?", "noun"), ("How much water should a dog drink per day?", "noun")],
    ),
    (
        "What is a good name for a golden retriever?",
        "What's a good name for a golden retriever?",
        [("What is a good name for a cat?", "noun"), ("What is a good name for a boat?", "noun")],
    ),
    (
        "How do I enable dark mode in VS Code?",
        "How can I turn on dark mode in VS Code?",
        [("How do I disable dark mode in VS Code?", "noun"), ("How do I enable dark mode in Vim?", "entity")],
    ),
    (
        "What is the tallest mountain in Africa?",
        "Which is the tallest mountain in Africa?",
        [("What is the tallest mountain in Europe?", "entity"), ("What is the longest river in Africa?", "noun")],
    ),
    (
        "How do I split a string in Python?",
        "How can I split a string in Python?",
        [("How do I join a string in Python?", "noun"), ("How do I split a string in Rust?", "entity")],
    ),
    (
        "What is Mia's favourite subject at school?",
        "What's Mia's favourite subject at school?",
        [
            ("What is Leo's favourite subject at school?", "entity"),
            ("What is Mia's least favourite subject at school?", "noun"),
        ],
    ),
    (
        "How do I deploy to Fly.io?",
        "How can I deploy to Fly.io?",
        [("How do I deploy to Render?", "entity"), ("How do I roll back on Fly.io?", "noun")],
    ),
    (
        "What is 15 percent of 80?",
        "What's 15 percent of 80?",
        [("What is 20 percent of 80?", "number"), ("What is 15 percent of 60?", "number")],
    ),
    (
        "Which vitamins are in spinach?",
        "What vitamins are in spinach?",
        [("Which vitamins are in kale?", "noun"), ("Which minerals are in spinach?", "noun")],
    ),
    (
        "How do I rename a branch in git?",
        "How can I rename a git branch?",
        [("How do I delete a branch in git?", "noun"), ("How do I rename a tag in git?", "noun")],
    ),
    (
        "Should I use tabs or spaces in Python?",
        "Tabs or spaces in Python, which should I use?",
        [("Should I use tabs or spaces in Go?", "entity"), ("Should I not use tabs in Python?", "negation")],
    ),
    (
        "What was decided about the Q3 budget?",
        "What did we decide about the Q3 budget?",
        [("What was decided about the Q4 budget?", "entity"), ("What was decided about the Q3 roadmap?", "noun")],
    ),
    (
        "How do I train a puppy to sit?",
        "How can I train a puppy to sit?",
        [("How do I train a puppy to stay?", "noun"), ("How do I train a cat to sit?", "noun")],
    ),
    (
        "Where is the Eiffel Tower?",
        "Where is the Eiffel Tower located?",
        [("Where is the Leaning Tower?", "entity"), ("Where is the Empire State Building?", "entity")],
    ),
    (
        "How do I fix a flat bike tire?",
        "How can I fix a flat bike tire?",
        [("How do I fix a flat car tire?", "noun"), ("How do I inflate a bike tire?", "noun")],
    ),
    (
        "What is the time complexity of quicksort?",
        "What's the time complexity of quicksort?",
        [("What is the time complexity of mergesort?", "noun"), ("What is the space complexity of quicksort?", "noun")],
    ),
    (
        "Can dogs eat grapes?",
        "Are dogs able to eat grapes?",
        [("Can dogs eat apples?", "noun"), ("Can cats eat grapes?", "noun")],
    ),
    (
        "How do I add a user to a Linux group?",
        "How can I add a user to a Linux group?",
        [("How do I remove a user from a Linux group?", "noun"), ("How do I add a user to a Windows group?", "entity")],
    ),
    (
        "What is the speed of light?",
        "What's the speed of light?",
        [("What is the speed of sound?", "noun"), ("What is the color of light?", "noun")],
    ),
    (
        "How many players are on a soccer team?",
        "How many players does a soccer team have?",
        [("How many players are on a basketball team?", "noun"), ("How many coaches are on a soccer team?", "noun")],
    ),
    (
        "How do I merge two PDFs?",
        "How can I merge two PDFs?",
        [("How do I merge three PDFs?", "number"), ("How do I split two PDFs?", "noun")],
    ),
    (
        "Which plan includes 10 seats?",
        "What plan includes 10 seats?",
        [("Which plan includes 50 seats?", "number"), ("Which plan does not include 10 seats?", "negation")],
    ),
    (
        "What did Caroline say about the adoption agency?",
        "What did Caroline tell us about the adoption agency?",
        [
            ("What did Melanie say about the adoption agency?", "entity"),
            ("What did Caroline say about the pottery class?", "noun"),
        ],
    ),
    (
        "How do I bake bread without yeast?",
        "How can I bake bread without yeast?",
        [("How do I bake bread with yeast?", "negation"), ("How do I bake cake without yeast?", "noun")],
    ),
    (
        "What's the weather in Paris today?",
        "What is the weather like in Paris today?",
        [("What's the weather in Rome today?", "entity")],
    ),
    (
        "What is the latest version of Django?",
        "Which is the latest Django version?",
        [("What is the latest version of Flask?", "entity")],
    ),
    (
        "What are the opening hours this week?",
        "When are you open this week?",
        [("What are the opening hours next week?", "time")],
    ),
    (
        "Did we ship the release in March?",
        "Was the release shipped in March?",
        [("Did we ship the release in April?", "time"), ("Did we ship the release in March 2025?", "time")],
    ),
    (
        "What happened at the meeting on Monday?",
        "What happened in Monday's meeting?",
        [("What happened at the meeting on Tuesday?", "time"), ("What happened at the party on Monday?", "noun")],
    ),
    (
        "When is Mia's birthday in 2026?",
        "When's Mia's birthday in 2026?",
        [("When is Mia's birthday in 2027?", "time"), ("When is Leo's birthday in 2026?", "entity")],
    ),
    (
        "How do I configure logging in FastAPI?",
        "How can I set up logging in FastAPI?",
        [("How do I configure logging in Flask?", "entity"), ("How do I configure CORS in FastAPI?", "entity")],
    ),
    (
        "How do I list files in a directory with Python?",
        "How can I list the files in a directory using Python?",
        [
            ("How do I delete files in a directory with Python?", "noun"),
            ("How do I list files in a directory with Bash?", "entity"),
        ],
    ),
    (
        "What is the maximum upload size?",
        "What's the max upload size?",
        [("What is the minimum upload size?", "noun"), ("What is the maximum download size?", "noun")],
    ),
    (
        "How do I cook rice in a rice cooker?",
        "How can I cook rice in a rice cooker?",
        [("How do I cook quinoa in a rice cooker?", "noun"), ("How do I clean a rice cooker?", "noun")],
    ),
]

# Harder paraphrases: other words, other word order.
EXTRA_PARAPHRASES = [
    ("How do I reset my password?", "I forgot my password, how do I reset it?"),
    ("What is the function of money?", "What purpose does money have?"),
    ("How do I install Python on Ubuntu?", "Installing Python on Ubuntu: how?"),
    ("How many days are in a leap year?", "Number of days in a leap year?"),
    ("What is the capital of France?", "Which city is the capital of France?"),
    ("How do I persist a Chroma collection?", "How do I make a Chroma collection persistent?"),
    ("How do I convert 100 dollars to euros?", "100 dollars in euros?"),
    ("What does HTTP status 404 mean?", "Meaning of HTTP status 404?"),
    ("How do I sort a list in Python?", "Sorting a list in Python?"),
    ("How do I cancel my subscription?", "I want to cancel my subscription, how?"),
    ("What is the boiling point of water?", "At what temperature does water boil?"),
    ("Who wrote Pride and Prejudice?", "Pride and Prejudice was written by whom?"),
    ("What is the population of Canada?", "How many people live in Canada?"),
    ("What port does Postgres listen on?", "Postgres default port?"),
    ("How long should I boil an egg?", "Boiling an egg: how long?"),
    ("What is the difference between TCP and UDP?", "TCP vs UDP: what is the difference?"),
    ("How do I undo the last git commit?", "Undo the last git commit?"),
    ("Why is my Docker container restarting?", "My Docker container keeps restarting, why?"),
    ("What are the symptoms of the flu?", "Flu symptoms?"),
    ("How much water should I drink per day?", "Daily water intake, how much should I drink?"),
    ("How do I enable dark mode in VS Code?", "Enable dark mode in VS Code?"),
    ("What is the tallest mountain in Africa?", "Highest mountain in Africa?"),
    ("How do I split a string in Python?", "Python: split a string?"),
    ("How do I deploy to Fly.io?", "Deploying to Fly.io, how?"),
    ("What is 15 percent of 80?", "15 percent of 80?"),
    ("How do I rename a branch in git?", "Rename a git branch?"),
    ("How do I train a puppy to sit?", "Teaching a puppy to sit?"),
    ("How do I fix a flat bike tire?", "Repairing a flat bike tire?"),
    ("Can dogs eat grapes?", "Are grapes safe for dogs?"),
    ("What is the speed of light?", "How fast does light travel?"),
    ("How do I merge two PDFs?", "Merge two PDFs?"),
    ("How do I bake bread without yeast?", "Bread without yeast, how to bake it?"),
    ("How do I configure logging in FastAPI?", "FastAPI logging configuration?"),
    ("What is the maximum upload size?", "Upload size limit?"),
    ("How do I cook rice in a rice cooker?", "Cooking rice in a rice cooker?"),
    ("Which database did we choose for analytics?", "What database did we go with for analytics?"),
    ("What was decided about the Q3 budget?", "Q3 budget decision?"),
    ("How do I export my contacts?", "Exporting my contacts?"),
    ("What is the time complexity of quicksort?", "Quicksort time complexity?"),
    ("How many players are on a soccer team?", "Soccer team size in players?"),
]

pairs = []
for question, paraphrase, misses in ROWS:
    pairs.append({"a": question, "b": paraphrase, "label": "paraphrase", "style": "close"})
    for miss, kind in misses:
        pairs.append({"a": question, "b": miss, "label": f"near_miss:{kind}"})
pairs.extend({"a": q, "b": p, "label": "paraphrase", "style": "reworded"} for q, p in EXTRA_PARAPHRASES)
Path(__file__).with_name("cache_pairs.json").write_text(json.dumps(pairs, indent=1, ensure_ascii=False) + "\n")
print(len(pairs), sum(p["label"] == "paraphrase" for p in pairs))
