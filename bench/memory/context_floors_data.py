"""The synthetic set of ``bench/memory/context_floors.py``, written for it (no data set has skills,
pool values or working memory next to unrelated documents): a facilities handbook and a trip
itinerary as documents, pages, skills, pool values and working-memory keys, each with the
questions it answers. Every item and question has a domain; a question's *gold* items are the
ones it names; an item of another domain is *off topic* for it."""

from __future__ import annotations

HANDBOOK_SECTIONS = [
    (
        "Fire safety",
        "Fire exits are marked in green on every floor. The assembly point is the car park "
        "behind building B. Fire drills take place on the first Monday of each quarter at "
        "10:00, and wardens wear yellow vests. Never prop fire doors open with wedges.",
    ),
    (
        "Parking",
        "Staff parking is on levels 2 and 3 of the north garage. Visitors park on level 1 and "
        "register their number plate at reception. Electric vehicle chargers are in bays 40 to "
        "52 and may be used for at most four hours a day.",
    ),
    (
        "Badges and access",
        "Your access badge opens the main entrance from 06:30 to 21:00 on weekdays. A lost "
        "badge must be reported to security within 24 hours; a replacement costs 15 euros. "
        "Tailgating through the turnstiles is not allowed.",
    ),
    (
        "Cleaning",
        "Offices are cleaned every evening after 18:00. Desks must be cleared on Fridays for "
        "the deep clean. Spills in the kitchens are reported to facilities through the service "
        "desk, category Cleaning.",
    ),
    (
        "Heating and ventilation",
        "The heating runs from October to April. Radiator thermostats are set centrally to 21 "
        "degrees; ask facilities before moving them. Windows on floors 5 to 8 do not open; the "
        "ventilation replaces the air six times an hour.",
    ),
    (
        "Kitchens",
        "Each floor has a kitchen with a dishwasher, a fridge and a coffee machine. The fridges "
        "are emptied every Friday at 16:00; label your food with your name and the date. "
        "Microwaves may not be used for popcorn.",
    ),
    (
        "Meeting rooms",
        "Meeting rooms are booked in the calendar for at most three hours at a time. Rooms "
        "unused 15 minutes after the start of a booking are released automatically. The large "
        "auditorium on the ground floor is booked through the events team.",
    ),
    (
        "Waste and recycling",
        "Paper, plastic and glass go into the coloured bins by the lifts. Batteries and toner "
        "cartridges are collected at the post room. Confidential paper goes into the locked "
        "grey consoles, which are shredded on site every week.",
    ),
    (
        "First aid",
        "First aid kits hang next to every kitchen. Trained first aiders are listed on the "
        "intranet page of each floor. The defibrillator is at reception; call the internal "
        "emergency number 5555 before anything else.",
    ),
    (
        "Deliveries and post",
        "Parcels are delivered to the post room in the basement and collected there between "
        "12:00 and 14:00. Personal deliveries to the office are not accepted. Outgoing post "
        "leaves at 15:30 every working day.",
    ),
]

HANDBOOK_QUESTIONS = [
    ("Where is the assembly point during a fire alarm?", "Fire safety"),
    ("Which garage levels are for staff parking?", "Parking"),
    ("How much does a replacement access badge cost?", "Badges and access"),
    ("When are the office fridges emptied?", "Kitchens"),
    ("How long can a meeting room be booked for?", "Meeting rooms"),
    ("Where do I throw away old batteries and toner cartridges?", "Waste and recycling"),
    ("Where is the defibrillator in the building?", "First aid"),
    ("When can I collect a parcel from the post room?", "Deliveries and post"),
    ("Can I change the radiator thermostat in my office?", "Heating and ventilation"),
    ("When is the deep clean of the desks?", "Cleaning"),
]

TRIP_ITINERARY = (
    "Lisbon trip itinerary for Maria and Ana\n\n"
    "Maria flies from Berlin to Lisbon on 14 June on TAP flight TP 541, leaving at 09:40 and "
    "landing at 11:55. Her sister Ana joins her on 16 June.\n\n"
    "They stay at the Hotel Baixa Jardim, a twin room with a view of the castle, booked for "
    "120 euros a night. Check-in is from 15:00.\n\n"
    "On 17 June they take the train to Sintra to visit the Pena Palace; tickets were bought "
    "online for the 10:30 entry. On 18 June they have dinner at a seafood restaurant in "
    "Cais do Sodre that serves no peanuts, because Maria is allergic to them.\n\n"
    "They fly back on 21 June. Travel insurance covers cancellations up to 2,000 euros."
)

TRIP_QUESTIONS = [
    "Which hotel are Maria and Ana staying at in Lisbon?",
    "When does Maria's flight to Lisbon land?",
    "What are Maria and Ana visiting in Sintra?",
    "Where will Maria and Ana have dinner on the 18th of June?",
    "How much does the hotel in Lisbon cost per night?",
    "When does Ana join Maria on the trip?",
    "What does the travel insurance for the Lisbon trip cover?",
    "When do Maria and Ana fly back from Lisbon?",
]

# (title, content, domain) and the questions each answers.
PAGES = [
    (
        "Lisbon trip plan",
        "Plan for Maria's trip to Lisbon in June: flights, the hotel in Baixa, a day in Sintra "
        "and restaurants without peanuts.",
        "trip",
    ),
    (
        "Office parking rules",
        "Staff park on levels 2 and 3 of the north garage; visitors on level 1. EV chargers in "
        "bays 40 to 52.",
        "handbook",
    ),
    (
        "Release checklist",
        "Before a release: freeze the main branch, run the full test suite, tag the version, "
        "build the container image and deploy to staging before production.",
        "devops",
    ),
    (
        "Sourdough notes",
        "Feed the starter twice a day with equal weights of flour and water. Bulk fermentation "
        "takes five hours at 24 degrees; shape, then proof overnight in the fridge.",
        "cooking",
    ),
    (
        "Quarterly budget review",
        "The finance team reviews each department's spending against the budget every quarter "
        "and flags overruns above five percent.",
        "finance",
    ),
    (
        "Onboarding a new engineer",
        "A new engineer gets a laptop, an access badge, accounts for the code host and the "
        "chat, and a buddy for the first two weeks.",
        "people",
    ),
]

PAGE_QUESTIONS = [
    ("What is the plan for Maria's trip to Lisbon?", "Lisbon trip plan"),
    ("Where should visitors park at the office?", "Office parking rules"),
    ("What has to happen before we release a new version?", "Release checklist"),
    ("How often do I feed the sourdough starter?", "Sourdough notes"),
    ("How are department budgets reviewed each quarter?", "Quarterly budget review"),
    ("What does a new engineer receive on the first day?", "Onboarding a new engineer"),
]

# (name, category, description, procedure, domain) and the questions each answers.
SKILLS = [
    (
        "deploy-service-helm",
        "deployment",
        "Deploy a service to the Kubernetes cluster with Helm.",
        "helm upgrade --install with the release values; wait for the rollout; roll back on "
        "failure.",
        "devops",
    ),
    (
        "rollback-release",
        "deployment",
        "Roll back a failed release to the previous version.",
        "helm rollback to the last good revision, then check the health endpoints.",
        "devops",
    ),
    (
        "postgres-backup-restore",
        "operations",
        "Back up a PostgreSQL database and restore it.",
        "pg_dump in custom format, copy to object storage, pg_restore into a fresh database.",
        "devops",
    ),
    (
        "rotate-tls-certificates",
        "security",
        "Rotate the TLS certificates of the public load balancer.",
        "Issue new certificates, upload them, switch the listener, revoke the old ones.",
        "devops",
    ),
    (
        "summarize-meeting-notes",
        "documentation",
        "Summarize meeting notes into decisions and action items.",
        "List decisions, owners and due dates; keep it under ten lines.",
        "office",
    ),
    (
        "book-business-travel",
        "planning",
        "Book flights and hotels for a business trip within the travel policy.",
        "Compare fares, choose refundable hotels under the city's nightly cap, file the booking.",
        "trip",
    ),
    (
        "translate-customer-email",
        "communication",
        "Translate a customer email between English and Portuguese.",
        "Keep names and numbers; match the customer's tone; flag legal terms.",
        "office",
    ),
    (
        "triage-bug-report",
        "debugging",
        "Triage an incoming bug report: reproduce, label severity, assign an owner.",
        "Reproduce on the latest build, attach logs, set severity from the impact matrix.",
        "devops",
    ),
    (
        "plan-sprint",
        "planning",
        "Plan a two-week sprint from the prioritised backlog.",
        "Estimate stories, fit them to the team's velocity, agree the sprint goal.",
        "office",
    ),
    (
        "recipe-scaling",
        "general",
        "Scale a recipe to a different number of servings.",
        "Multiply each ingredient by the ratio; adjust baking time for larger tins.",
        "cooking",
    ),
]

SKILL_QUESTIONS = [
    ("How do I deploy the payments service to Kubernetes?", "deploy-service-helm"),
    ("The release failed, how do I go back to the previous version?", "rollback-release"),
    ("How can I back up the Postgres database and restore it?", "postgres-backup-restore"),
    ("Our TLS certificate expires next week; how do we replace it?", "rotate-tls-certificates"),
    (
        "Turn these meeting notes into a list of decisions and action items.",
        "summarize-meeting-notes",
    ),
    ("Book me a flight and a hotel for the conference in Porto.", "book-business-travel"),
    ("Translate this email from a Brazilian customer into English.", "translate-customer-email"),
    ("A user reported a crash when saving; how should we triage it?", "triage-bug-report"),
    ("Help me plan the next two-week sprint from the backlog.", "plan-sprint"),
    ("How do I double this cake recipe for twelve people?", "recipe-scaling"),
]

# Pools: pool id -> (data, domain); questions name a leaf (pool id, dot path).
POOLS = {
    "deploy": (
        {
            "region": "eu-west-1",
            "cluster": "prod-blue",
            "window": "Tuesdays from 14:00 to 16:00 UTC",
            "on_call": "Ines Duarte",
            "helm_chart_version": "4.2.1",
        },
        "devops",
    ),
    "trip": (
        {
            "hotel": "Hotel Baixa Jardim, twin room, 120 euros a night",
            "flight_out": "TP 541 Berlin to Lisbon on 14 June at 09:40",
            "flight_back": "21 June, evening flight",
            "allergies": "Maria is allergic to peanuts",
        },
        "trip",
    ),
    "kitchen": (
        {
            "starter_feeding": "twice a day, equal flour and water",
            "oven_temperature": "250 degrees for the first 20 minutes",
        },
        "cooking",
    ),
}

POOL_QUESTIONS = [
    ("Which AWS region do we deploy production to?", ("deploy", "region")),
    ("When is the deployment window?", ("deploy", "window")),
    ("Who is on call for deployments?", ("deploy", "on_call")),
    ("Which helm chart version is deployed?", ("deploy", "helm_chart_version")),
    ("Which hotel is booked for the Lisbon trip?", ("trip", "hotel")),
    ("What is Maria allergic to?", ("trip", "allergies")),
    ("When is the flight back from Lisbon?", ("trip", "flight_back")),
    ("How hot should the oven be for the bread?", ("kitchen", "oven_temperature")),
]

# Working memory of one session: key -> (value, domain).
WORKING = {
    "current_task": ("Migrate the billing database from PostgreSQL 13 to 16", "devops"),
    "blocked_by": ("The billing migration waits for the backup restore test", "devops"),
    "draft_reply": ("Dear Maria, your hotel in Lisbon is confirmed for 14 to 21 June", "trip"),
    "trip_budget": ("Lisbon trip budget: 1,500 euros for two people", "trip"),
    "shopping_list": ("flour, rye, salt, sesame seeds for the sourdough", "cooking"),
}

WORKING_QUESTIONS = [
    ("Which database migration am I working on?", "current_task"),
    ("What is the billing migration waiting for?", "blocked_by"),
    ("What did I write to Maria about her hotel?", "draft_reply"),
    ("What is the budget for the Lisbon trip?", "trip_budget"),
    ("What do I need to buy for the sourdough?", "shopping_list"),
]
