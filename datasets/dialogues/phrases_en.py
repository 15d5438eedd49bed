"""English wordings: how a user states each fact while asking for help, how the assistant
answers, and how a question asks for the fact again without the statement's words.

Placeholders: ``{v}`` the value, ``{old}`` the value it replaces, ``{name}`` and ``{rel}`` another
person, ``{user}`` the user's first name, ``{when}`` a relative day ("yesterday"), and for the
multi-hop pairs ``{child}``, ``{species}``, ``{city}``, ``{month}``. Assistant replies never
repeat the user's fact, so the user's turn is the one place it is stated.
"""

from __future__ import annotations

# Each fact: "state" (user, assistant) pairs, "ask" questions; changeable slots add "change"
# pairs (the later statement) and, where it exists, "other" pairs and "ask_other" questions
# about somebody else's value of the same slot.
FACTS = {
    "city": {
        "state": [
            (
                "Can you suggest some day trips for a free Saturday? I'm based in {v} and I'd "
                "rather take the train than drive.",
                "Sure. Good car-free day trips usually fall into three kinds: a coastal or "
                "riverside town on a direct line, a national park with a bus from the station to "
                "the trailhead, and a historic market town for a slow day of cafés and bookshops. "
                "Check the weekend timetable for the last train back, and look for off-peak "
                "day-return fares.",
            ),
            (
                "Rent here in {v} went up again this year. Could you help me put together a "
                "monthly budget that still leaves something for savings?",
                "Of course. A common starting point is 50/30/20: half of take-home pay for needs "
                "(rent, bills, groceries, transport), 30% for wants, 20% for savings and debt. "
                "List your fixed costs first, then give every remaining pound a job. If needs "
                "come to more than half, trim wants before savings.",
            ),
            (
                "It's been pouring in {v} for four days straight. Ideas for indoor things to do "
                "this weekend that aren't just streaming shows?",
                "Rainy-weekend ideas: a climbing gym or a public pool, a museum you've never been "
                "inside, a one-off class (cooking, pottery, improv), a board-game afternoon with "
                "friends, or a slow recipe like hand-made dumplings that turns into a whole "
                "afternoon project.",
            ),
        ],
        "ask": [
            "Where do I live these days?",
            "What city is {user} living in right now?",
            "Which town is home for me at the moment?",
        ],
        "change": [
            (
                "We finally moved to {v} last month! Boxes everywhere. What's a sensible order to "
                "unpack so the flat feels normal quickly?",
                "Congratulations! Unpack in this order: bed and bedding first (sleep matters "
                "most), then bathroom basics, then one working corner of the kitchen, then your "
                "desk if you work from home. Leave books and decorations for the weekends — "
                "they're the fun part.",
            ),
            (
                "Quick update: I left {old} behind and relocated to {v} in the spring. Could you "
                "help me write a short message so friends have my new address?",
                "Here's a short one: \"Hi all — new chapter! I've moved, and my new address is "
                "below. The kettle's on and the sofa bed is free, so come and visit. Please "
                'update your contacts, and send me your latest addresses too."',
            ),
            (
                "Now that I've settled in {v}, I need to register with a new dentist and doctor. "
                "What should I look for?",
                "Look at how far the practice is from home and whether it's taking new patients, "
                "the opening hours (early or late slots help if you work), online booking, and "
                "recent reviews about waiting times. Bring your ID, proof of address and a list "
                "of current medication when you register.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} lives in {v} and I'm staying there in a few weeks. What's a nice "
                "thank-you gift to bring for a host?",
                "Good host gifts: something local from your own area (a food speciality or a "
                "print), a nice bottle or tea with a handwritten card, a plant that's hard to "
                "kill, or an offer to cook dinner one evening — often the most appreciated of "
                "all.",
            ),
            (
                "{name}, my {rel}, just got a flat in {v}. Could you help me write a short "
                "housewarming card?",
                'Try: "Congratulations on the new place! May it be full of good food, good '
                "friends and very few broken boxes. Save a spot on the sofa for me — I'll bring "
                'the snacks."',
            ),
        ],
        "ask_other": [
            "Where is my {rel} {name} based?",
            "Which city does {name} call home?",
        ],
    },
    "job": {
        "state": [
            (
                "I've been working as {v} for six years and I'm thinking about asking for a "
                "raise. How do I prepare for that conversation?",
                "Collect evidence first: results you delivered, responsibilities you took on, and "
                "what similar roles pay locally. Ask for a meeting dedicated to it, open with "
                "your contribution rather than your needs, name a specific figure, and agree a "
                'timeline if the answer is "not now".',
            ),
            (
                "Long week — that's life as {v}, I suppose. Can you suggest a 20-minute wind-down "
                "routine for Friday evenings?",
                "Try this: 5 minutes writing down what's left for Monday so your head can let go, "
                "10 minutes of a slow walk or stretching, then 5 minutes with a warm drink and no "
                "screens. Doing the same thing every Friday teaches your brain the week is over.",
            ),
            (
                "I need a LinkedIn headline. I'm {v} and I want it to sound confident but not "
                "cheesy.",
                "A reliable pattern is role + speciality + the value you bring, for example "
                '"[Role] · [Speciality] · Helping [who] do [what]". Keep it under 120 '
                'characters, skip words like "guru" or "ninja", and use the terms recruiters '
                "in your field actually search for.",
            ),
        ],
        "ask": [
            "What do I do for a living?",
            "What's {user}'s profession?",
            "What kind of job pays my bills?",
        ],
        "change": [
            (
                "Big news: I left my old role and started as {v} two weeks ago. Any tips for the "
                "first ninety days in a new position?",
                "Congratulations! First 30 days: listen and learn how decisions get made. Next 30: "
                "deliver one visible, modest win. Last 30: propose one improvement based on what "
                "you've learned. Book short chats with the people your work depends on early.",
            ),
            (
                "I made the career switch — I'm now {v}! Could you help me rewrite my CV summary "
                "to match?",
                "Sure. Lead with the new title and two or three skills that transfer from your "
                "previous career, then one concrete achievement with a number in it. Keep it to "
                "three lines; the rest of the CV can carry the history.",
            ),
            (
                "First month as {v} done. Changing careers at my age was scary. How do I keep "
                "learning without burning out?",
                "Pick one skill per month rather than everything at once, block two short "
                'learning sessions a week in your calendar, and keep a "done" list so you see '
                "progress. Protect sleep and one fully free day; learning sticks better rested.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} is {v} and keeps getting asked for free advice at parties. How "
                "can someone politely say no to that?",
                "A friendly script: \"I'd love to help, but I can't really advise properly over a "
                "drink — book a proper appointment and you'll get a better answer.\" Said with a "
                "smile, then changing the subject, it usually works.",
            ),
            (
                "{name} (my {rel}) works as {v} and has a big exam coming up. What's a good care "
                "package to send?",
                "A thoughtful exam care package: good snacks that aren't all sugar, nice tea or "
                "coffee, a quality highlighter set, earplugs, a short encouraging note, and "
                "something for afterwards, like tickets or a voucher to celebrate.",
            ),
        ],
        "ask_other": [
            "What is my {rel}'s line of work?",
            "What does {name} do professionally?",
        ],
    },
    "employer": {
        "state": [
            (
                "I work at {v} and we have annual reviews next month. Can you help me list my "
                "achievements in a clear way?",
                "Use one line per achievement: what you did, how, and the result, ideally with a "
                'number ("cut report time from 3 days to 1 by automating the export"). Group '
                "them under 3–4 themes and put the most impressive one first.",
            ),
            (
                "The canteen at {v} is awful, so I want to start bringing lunch. Ideas for "
                "lunches that survive a morning in a bag?",
                "Good travellers: grain salads (farro, couscous) with a sharp dressing, "
                "noodle salads, sturdy wraps, bean chilli in a flask, and frittata slices. Keep "
                "dressings separate until lunch and add a small ice pack in warm weather.",
            ),
            (
                "Our team at {v} is doing a charity bake sale on Friday. What's easy to bake in "
                "bulk?",
                "Tray bakes are your friend: brownies, flapjacks, lemon drizzle or banana bread "
                "baked in a roasting tin and cut into squares. Label anything containing nuts, and "
                "bring small paper bags so people can take slices back to their desks.",
            ),
        ],
        "ask": [
            "Which company pays my salary?",
            "Who is {user}'s employer right now?",
            "What organisation am I on the payroll of?",
        ],
        "change": [
            (
                "Last day at my old job was Friday; on Monday I start at {v}. How do I make a "
                "good first impression?",
                "Arrive a little early, learn names (write them down after meetings), ask more "
                "than you tell in the first weeks, and say yes to lunch invitations. Deliver one "
                "small thing early so people see you follow through.",
            ),
            (
                "I accepted the offer from {v} and handed in my notice at {old}! Can you help me "
                "write a gracious goodbye email to the team?",
                "Here's a draft: \"Dear all, as some of you know, I'm moving on at the end of the "
                "month. Thank you for the support, the laughs and everything I've learned here. "
                "I'd love to stay in touch — my personal email is below. All the best.\"",
            ),
            (
                "Settling in at {v} now — new badge, new laptop, new everything. How do I learn "
                "forty names quickly?",
                "Use the name straight away in conversation, link it to something visual about "
                "the person, and jot names on the org chart after each meeting. Reviewing the "
                "list for two minutes a day for a week does most of the work.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} just got hired by {v}. What's a nice way to congratulate "
                "someone on a new job?",
                "A handwritten card plus something small and useful for the first day — a good "
                "notebook, a reusable coffee cup, or lunch on you in their first week — feels "
                "personal without being over the top.",
            ),
            (
                "{name}, my {rel}, has been at {v} for ages and is thinking of leaving. How do "
                "you help someone decide without pushing?",
                "Ask open questions rather than giving verdicts: what they'd miss, what they "
                "wouldn't, and what a good day at work looks like for them. Offer to be a "
                "sounding board for a pros-and-cons list; the decision stays theirs.",
            ),
        ],
        "ask_other": [
            "Which company does my {rel} work for?",
            "Where is {name} employed?",
        ],
    },
    "partner": {
        "state": [
            (
                "My partner {v} and I have our anniversary coming up. Could you suggest something "
                "thoughtful that isn't a restaurant dinner?",
                "Some ideas: recreate your first date at home, a day trip somewhere neither of "
                "you has been, a cooking class together, a photo book of your year, or a picnic "
                "at sunset with a playlist of songs that mean something to you both.",
            ),
            (
                "{v} and I have been together three years and we still argue about whose turn it is "
                "to do the dishes. Is there a fair chore system for two people?",
                "Try splitting by ownership rather than turns: each person owns certain chores "
                "completely, chosen by preference, and you swap the ones nobody likes monthly. "
                'A shared list on the fridge stops the "I did it last time" debate.',
            ),
            (
                "It's our second anniversary soon and I'm planning a surprise weekend away for {v}, "
                "who loves the sea. Where should I start?",
                "Start with dates and a budget, then pick a coastal place within three hours so "
                "travel doesn't eat the weekend. Book somewhere with a view, plan one special "
                "meal and leave the rest loose. Pack a bag for them secretly, or ask a friend "
                "to help.",
            ),
        ],
        "ask": [
            "Who am I in a relationship with?",
            "What's the name of {user}'s significant other?",
            "Who is my other half?",
        ],
        "change": [
            (
                "{old} and I split up in the spring. I've been seeing someone new, {v}, for a "
                "couple of months. How do I introduce a new partner to friends without it being "
                "awkward?",
                "Keep the first meeting low-key and short: a group drink or a casual dinner "
                "rather than a big party. Give your friends a little context beforehand, and "
                "have a couple of easy topics ready that everyone can join in on.",
            ),
            (
                "I'm moving in with {v} next month! We've been together since last summer. What "
                "should we agree on before sharing a flat?",
                "Talk about money (rent split, shared costs, a joint account or not), chores, "
                "guests and alone time, noise and sleep schedules, and what happens to the lease "
                "if things change. It's less awkward to agree it now than to argue later.",
            ),
            (
                "{v} — the person I've been dating for a few months now — wants to meet my "
                "parents. Any advice to make that dinner go smoothly?",
                "Brief both sides beforehand with a few safe topics and anything to avoid, keep "
                "it to a couple of hours, and choose somewhere familiar to your parents. A small "
                "gift from your guest goes a long way.",
            ),
        ],
    },
    "diet": {
        "state": [
            (
                "I follow {v}, so could you give me five dinners for this week that fit and take "
                "less than half an hour?",
                "Here are five quick ones to adapt to your rules: a sheet-pan tray bake with "
                "seasonal vegetables, a fast stir-fry with plenty of greens, a hearty soup, a "
                "build-your-own grain bowl, and a big salad with a warm topping. Batch the "
                "sauces on Sunday to save time.",
            ),
            (
                "Going to a wedding where the caterer asks for dietary needs. I'm on {v} — how "
                "should I phrase the request so it's clear?",
                "Be short and specific in the RSVP: say what you can't have and give one or two "
                'examples of what\'s fine, then add "happy with a simple option". Caterers '
                "appreciate clarity more than apologies.",
            ),
            (
                "Three years on {v} now and my energy is good, but I want to be sure I'm not "
                "missing nutrients. What should I watch?",
                "Worth checking with a yearly blood test: iron, B12, vitamin D, and omega-3 "
                "intake, plus enough protein and fibre. A registered dietitian can look at a "
                "typical week of meals and spot gaps quickly.",
            ),
        ],
        "ask": [
            "What eating plan do I stick to?",
            "What are {user}'s food rules?",
            "How do I eat — anything to know before cooking for me?",
        ],
        "change": [
            (
                "Update: I've switched to {v} since last month. Can you redo my basic shopping "
                "list?",
                "Sure — send me what's on your current list and I'll mark what to drop, what to "
                "swap and what to add. As a rule, build it around fresh produce, a couple of "
                "protein sources you enjoy, and store-cupboard staples for quick meals.",
            ),
            (
                "I gave up {old} — it wasn't working for me — and now I'm on {v}. Any easy "
                "breakfasts?",
                "Easy options you can rotate: overnight oats or chia pots, eggs or tofu scrambled "
                "with greens, yoghurt with fruit and seeds, or a savoury toast. Prepare two or "
                "three in advance so weekday mornings stay simple.",
            ),
            (
                "My doctor suggested I try {v}, and I've stuck with it for six weeks now. What "
                "snacks work for it?",
                "Good snack ideas: a handful of nuts or seeds, vegetables with hummus, cheese or "
                "a soy-based alternative, fruit with nut butter, and roasted chickpeas. Portion "
                "them into small boxes so you don't graze from the bag.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} is coming for dinner and follows {v}. What main course would "
                "work for everyone at the table?",
                "Go for something modular: a big tray of roasted vegetables and a grain, with "
                "sauces and toppings on the side so everyone builds their own plate. It "
                "looks generous and nobody feels singled out.",
            ),
            (
                "Cooking for {name}, my {rel}, who's on {v}. Dessert ideas?",
                "Fruit-forward desserts are the safest: poached pears, a berry crumble with a "
                "flexible topping, sorbet, or baked apples with spices. Ask about specific "
                "ingredients before you commit.",
            ),
        ],
        "ask_other": [
            "What's my {rel}'s diet like?",
            "How does {name} eat?",
        ],
    },
    "phone": {
        "state": [
            (
                "My {v} battery dies by mid-afternoon. Which settings usually drain it the most?",
                "The usual culprits: screen brightness and always-on display, background app "
                'refresh, location services set to "always", and weak signal. Check the battery '
                "usage screen to see which apps use the most, and turn on the low-power mode "
                "after lunch.",
            ),
            (
                "How do I back up photos properly? Everything's on my {v} and nowhere else, "
                "which scares me.",
                "Follow the 3-2-1 rule: three copies, on two different kinds of storage, one "
                "off-site. In practice: cloud photo backup switched on, plus an occasional copy "
                "to an external drive at home.",
            ),
            (
                "Any apps for habit tracking that work well on the {v}?",
                "Look for one with home-screen widgets, reminders you can snooze, and a streak "
                "view — those matter more than features. Start with two habits, not ten; most "
                "people drop trackers when the list gets long.",
            ),
        ],
        "ask": [
            "Which handset do I carry around?",
            "What mobile does {user} use?",
            "What's the model of my phone these days?",
        ],
        "change": [
            (
                "Finally retired my old {old}; the new {v} arrived today. How do I move my chats "
                "over?",
                "Most messaging apps have a transfer option in their settings — run it before you "
                "wipe the old device, keep both on Wi-Fi and charging, and check that photos and "
                "attachments came across before resetting anything.",
            ),
            (
                "I switched to the {v} last week and I keep pressing the wrong buttons. Tips for "
                "getting used to it?",
                "Give it a week of deliberate use: customise the gestures and shortcuts to match "
                "your old habits where you can, move your most-used apps to the same spots as "
                "before, and turn off features you don't need yet.",
            ),
            (
                "New device: I've got the {v} now. Which privacy settings should I change first?",
                "Start with app permissions (location, microphone, camera, contacts), switch "
                "off ad personalisation, set a strong passcode with biometric unlock, and review "
                "which apps can track you across other apps.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} just got the {v} and keeps asking me how to set it up. What are "
                "the first five things to do with a new smartphone?",
                "1) Update the system, 2) turn on backups, 3) set a passcode and biometric "
                "unlock, 4) switch on find-my-device, 5) review notifications so only the "
                "important apps can interrupt.",
            ),
            (
                "{name}, my {rel}, swears the {v} has the best camera around. Is that true for "
                "night photos?",
                "Night performance depends on sensor size and processing more than the brand; "
                "recent flagships are all close. Independent camera reviews with side-by-side "
                "night shots are the fairest way to settle the argument.",
            ),
        ],
        "ask_other": [
            "What mobile does my {rel} own?",
            "Which handset does {name} have?",
        ],
    },
    "team": {
        "state": [
            (
                "I've supported {v} since I was a kid and the derby is on Saturday. Snack ideas "
                "for six people watching at my place?",
                "Match-day snacks that don't need attention during the game: a big pot of chilli "
                "with toppings, loaded nachos on a tray, sausage rolls or veggie pastries, and a "
                "bowl of something crunchy. Prep everything before kick-off.",
            ),
            (
                "Can you help me write a funny birthday message for my friend who mocks me for "
                "following {v}?",
                '"Happy birthday to the only person who can make fun of my football choices and '
                "still get invited to my sofa. Another year older, still wrong about football. "
                'Have a brilliant day!"',
            ),
            (
                "{v} lost again. Give me something productive to do with my Sunday so I stop "
                "refreshing the scores.",
                "Put the phone in another room and pick one small satisfying task: clear one "
                "cupboard, cook a big batch for the week, go for a long walk with a podcast, or "
                "call someone you've been meaning to catch up with.",
            ),
        ],
        "ask": [
            "Which club do I cheer for?",
            "Who does {user} root for?",
            "What side am I a fan of?",
        ],
        "change": [
            (
                "Don't laugh, but I've switched allegiance to {v}. Going to games with colleagues "
                "is fun. How do I learn the chants?",
                "Fan forums and video clips from the stands are the quickest way; most clubs have "
                "a handful of core chants. Stand near the regulars at your first games and follow "
                "along — nobody minds a learner.",
            ),
            (
                "After twenty years with {old}, I'm done. My season ticket is now for {v}. What "
                "should I bring to a first home game?",
                "Bring your ticket on your phone and a screenshot backup, a card for contactless "
                "payment, layers and a waterproof, and check the bag policy — many stadiums only "
                "allow small bags.",
            ),
            (
                "I've started following {v} instead — much more fun style of play. Any podcasts "
                "that explain tactics for beginners?",
                "Look for tactics shows that use simple language and diagrams; many have "
                "episode-length explainers on pressing, formations and set pieces. Watching a "
                "full replay with one of those explainers in mind helps a lot.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} is obsessed with {v}. What's a good present for a football-mad "
                "person?",
                "Ideas: a framed print of a famous match, a vintage shirt, a stadium tour, a good "
                "football book, or tickets to an away game they've never been to.",
            ),
            (
                "{name}, my {rel}, has a season ticket for {v} and invited me along. What do I "
                "need to know for a first match?",
                "Arrive early to soak up the atmosphere, learn two or three player names, don't "
                "wear the rival's colours, and follow your host's lead on when to stand and sing.",
            ),
        ],
        "ask_other": [
            "Which club does my {rel} follow?",
            "Who does {name} support?",
        ],
    },
    "car": {
        "state": [
            (
                "My {v} needs new tyres before winter. What should I look for, and is it worth "
                "paying extra for all-season ones?",
                "Check the size code on your current tyres, then compare wet-grip and noise "
                "ratings on the label. All-season tyres are worth it if you get occasional cold "
                "snaps but not heavy snow; otherwise good summer tyres are cheaper.",
            ),
            (
                "Road trip next month in my {v}. Can you make a checklist of things to pack for a "
                "long journey?",
                "Checklist: documents and insurance details, phone mount and charger, offline "
                "maps, water and snacks, a first-aid kit, warning triangle, a torch, a blanket, "
                "and a bag for rubbish. Check tyre pressure and oil before you leave.",
            ),
            (
                "The engine warning light came on in the {v} this morning. Is it safe to keep "
                "going until the garage opens Monday?",
                "A steady amber light usually means get it checked soon; a flashing one means "
                "stop as soon as it's safe. If it's steady and the car feels normal, short "
                "careful trips are generally fine, but get the code read as early as you can.",
            ),
        ],
        "ask": [
            "What vehicle do I own?",
            "What make and model is {user}'s motor?",
            "Which automobile is parked outside my place?",
        ],
        "change": [
            (
                "Sold the {old} at last and picked up a {v}. What maintenance should I schedule "
                "in the first year?",
                "First year: an oil and filter change at the interval in the handbook, tyre "
                "rotation, a brake check, and any recall checks with the dealer. Put the dates "
                "in your calendar now so they don't slip.",
            ),
            (
                "I'm getting used to the new {v} — the old one finally gave up. How do I set up "
                "the seat and mirrors properly?",
                "Seat first: knees slightly bent at full pedal travel, wrists resting on top of "
                "the wheel with shoulders back. Then mirrors: you should barely see the side of "
                "the car in the wing mirrors, which reduces blind spots.",
            ),
            (
                "We traded in our old car for a {v} last month. Is it worth getting a dashcam?",
                "Often, yes: it helps with insurance disputes and some insurers offer a discount. "
                "Get one with a front and rear camera, parking mode if you park on the street, "
                "and hardwire it rather than trailing a cable.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} drives a {v} and wants to sell it. What's a fair way to work out "
                "the asking price?",
                "Compare listings of the same model, year and mileage, adjust for condition and "
                "service history, and check an online valuation tool. Price slightly above the "
                "lowest you'd accept to leave room for negotiation.",
            ),
            (
                "{name} (my {rel}) just bought a {v}. Which checks should a new owner do in the "
                "first week?",
                "Read the handbook's warning-light page, check tyre pressures and fluid levels, "
                "save the roadside-assistance number, and confirm the service history and spare "
                "key came with the car.",
            ),
        ],
        "ask_other": [
            "What motor does my {rel} have?",
            "What vehicle is {name}'s?",
        ],
    },
    "sport": {
        "state": [
            (
                "My main workout is {v}, four mornings a week. What should I eat before a session?",
                "Something small and easy to digest 30–60 minutes before: a banana, toast with "
                "honey, or a small bowl of oats. Save the bigger, protein-rich meal for "
                "afterwards, and drink water when you wake up.",
            ),
            (
                "I pulled something in my shoulder, probably from all the {v}. How long should I "
                "rest before going back?",
                "For a mild strain, rest the painful movements for a few days, then reintroduce "
                "them gently over a week or two. If there's weakness, numbness, or pain at night, "
                "see a physiotherapist before going back.",
            ),
            (
                "Looking for a birthday treat for myself, ha. Any gear ideas for someone who does "
                "a lot of {v}?",
                "Treat-yourself ideas: a proper recovery tool (massage gun or foam roller), a "
                "good bag for your kit, a session with a coach to fix technique, or quality "
                "clothing that actually fits. Recovery gear tends to get used the most.",
            ),
        ],
        "ask": [
            "How do I keep in shape?",
            "What's {user}'s exercise of choice?",
            "Which physical activity do I do most?",
        ],
        "change": [
            (
                "I've stopped {old} and taken up {v} instead — easier on my knees. How do I build "
                "up without overdoing it?",
                "Start at about half of what feels possible, add no more than 10% a week, and "
                "keep at least one rest day between harder sessions. Soreness that lasts more "
                "than two days is a sign to back off.",
            ),
            (
                "New routine: {v} three times a week since the gym changed its timetable. Any "
                "beginner mistakes to avoid?",
                "Common ones: doing too much in the first fortnight, skipping the warm-up, "
                "copying advanced people's technique, and not sleeping enough. A lesson or two "
                "with a coach early on saves months of bad habits.",
            ),
            (
                "Joined a {v} club last month and I'm hooked. What's a good way to track progress?",
                "Keep a simple log: date, what you did, how hard it felt on a 1–10 scale, and one "
                "note. Every four weeks, repeat a benchmark session and compare — that shows "
                "progress more honestly than day-to-day feelings.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} does {v} every day and wants to try a competition. How do you "
                "find a beginner-friendly event?",
                "Local clubs usually list novice events on their websites; look for ones with "
                "categories by level or age, and pick a date with enough weeks to prepare. Going "
                "along as a spectator first takes away a lot of the nerves.",
            ),
            (
                "{name}, my {rel}, is really into {v}. Gift ideas under fifty pounds?",
                "Under fifty: a good water bottle, a technical top, a book by a well-known coach "
                "or athlete, a voucher for a class, or a recovery gadget like a massage ball set.",
            ),
        ],
        "ask_other": [
            "What exercise does my {rel} do?",
            "How does {name} keep in shape?",
        ],
    },
    "instrument": {
        "state": [
            (
                "I've been learning the {v} for about a year. How do I practise efficiently when "
                "I only have twenty minutes a day?",
                "Split the twenty minutes: 3 minutes warm-up, 10 minutes on the one passage or "
                "skill that's hardest right now, 5 minutes on a piece you enjoy, 2 minutes noting "
                "what to do tomorrow. Slow and focused beats long and scattered.",
            ),
            (
                "My neighbours can hear me practising the {v} in the evenings. Any ways to reduce "
                "the noise?",
                "Move practice to the room furthest from shared walls, add soft furnishings and a "
                "thick rug, practise the loudest material earlier in the day, and ask your "
                "neighbours which hours bother them least — they'll appreciate being asked.",
            ),
            (
                "Could you recommend some beginner-friendly songs? I play the {v}, nothing too "
                "fast please.",
                "Good starting points are slow folk tunes, simple pop ballads, and well-known "
                "film themes — pieces with repeating sections so you learn a pattern once and "
                'reuse it. Look for arrangements marked "easy" or "grade 1–2".',
            ),
        ],
        "ask": [
            "What do I make music on?",
            "Which instrument is {user} studying?",
            "What am I taking lessons in, musically?",
        ],
        "change": [
            (
                "I put the {old} away and started the {v} instead. Is it normal for my hands to "
                "hurt this much at first?",
                "Some soreness in the first weeks is normal while your hands adapt; sharp pain "
                "isn't. Keep sessions short (15–20 minutes), check your posture and tension, and "
                "ask your teacher to watch your technique.",
            ),
            (
                "Hobby swap: I'm learning the {v} now, lessons every Thursday. How do I read "
                "sheet music faster?",
                "Read a little every day rather than a lot once a week: very easy pieces, played "
                "slowly, without stopping to fix mistakes. Naming intervals instead of every "
                "single note speeds things up too.",
            ),
            (
                "Bought a second-hand {v} last month and I'm hooked. What should I check before "
                "paying for a proper service?",
                "Look for cracks, loose parts and anything that rattles, check that everything "
                "that should move does so smoothly, and ask a teacher to try it. A service is "
                "worth it if the basics are sound.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} plays the {v} in a community orchestra. What's a nice gift for "
                "a musician?",
                "Practical gifts they'll use: a good music stand light, a practice journal, "
                "concert tickets, a voucher for sheet music, or a nice case accessory. Ask what "
                "their current wish list is if you can.",
            ),
            (
                "{name}, my {rel}, is giving a small recital on the {v} next week. What do you "
                "say to someone after a performance?",
                'Be specific: mention a moment you enjoyed ("that slow middle part was '
                'beautiful"). Skip critiques unless asked, and a simple "I\'m so glad I came" '
                "always lands well.",
            ),
        ],
        "ask_other": [
            "What does my {rel} play?",
            "Which instrument is {name}'s?",
        ],
    },
    "language": {
        "state": [
            (
                "I'm studying {v} on my way to work. Can you give me ten phrases for ordering at "
                "a café?",
                'Here\'s a set to drill: a greeting, "I\'d like…", "a small/large one", '
                '"to take away / to have here", "with milk", "without sugar", "how much is '
                'it?", "can I pay by card?", "thank you", and "have a nice day". Say them '
                "out loud, and I can give you the translations one by one.",
            ),
            (
                "Can you quiz me on {v} numbers? I have a test in my evening class next week.",
                "Sure. I'll give you numbers in figures and you answer in words. Round one: 17, "
                "42, 99, 365, 1,000. Send your answers and I'll check them, then we'll do dates "
                "and prices.",
            ),
            (
                "My {v} teacher says my listening is weak. What podcasts or methods help with "
                "that?",
                "Try learner podcasts with transcripts: listen once without reading, once with "
                "the transcript, then once more without. Shadowing — repeating sentences right "
                "after the speaker — trains your ear and mouth together.",
            ),
        ],
        "ask": [
            "Which foreign tongue am I trying to pick up?",
            "What language is {user} trying to master?",
            "What am I learning to speak?",
        ],
        "change": [
            (
                "I've paused {old} — no time — and started {v} because of a work project. How do "
                "I avoid mixing them up later?",
                "Keep separate notebooks and apps for each, study them at different times of "
                "day, and when you come back to the paused one, start with a short review week "
                "rather than new material.",
            ),
            (
                "Enrolled in a {v} course this term! How many hours a week is realistic for "
                "steady progress?",
                "Three to five hours a week is realistic alongside work: the class itself plus "
                "three or four short sessions of review and listening. Consistency matters more "
                "than the total.",
            ),
            (
                "My new tutor for {v} is great. How do I make the most of one-hour lessons?",
                "Send the tutor what you want to work on beforehand, spend most of the hour "
                "speaking, record the lesson if allowed, and turn the tutor's corrections into "
                "flashcards the same day.",
            ),
        ],
        "other": [
            (
                "My {rel} {name} is learning {v} before moving abroad. Which apps are worth "
                "paying for?",
                "Pay for the ones that give speaking practice or feedback from real people — "
                "tutor marketplaces and conversation-exchange apps. Free flashcard apps cover "
                "vocabulary well enough.",
            ),
            (
                "{name} (my {rel}) just started {v} lessons. What's a good book for a complete "
                "beginner?",
                "A graded reader series is ideal: short stories written for level one, with a "
                "glossary and audio. Pair it with the course book rather than replacing it.",
            ),
        ],
        "ask_other": [
            "Which language is my {rel} picking up?",
            "What is {name} learning to speak?",
        ],
    },
    "coffee": {
        "state": [
            (
                "My usual order is {v} and it adds up. How much would I save a month making it "
                "at home, and what kit do I need?",
                "If you buy one a day on workdays, home-making usually saves somewhere between "
                "half and three quarters of the cost. You need a decent kettle or machine, a "
                "milk frother if your drink uses milk, and good ingredients.",
            ),
            (
                "Could you write a silly haiku about {v} for our team chat? It's my daily ritual.",
                '"Mug warms cold fingers / the inbox can wait a bit / first sip, then the world."',
            ),
            (
                "I have {v} around 3 pm every day and then sleep badly. Is that related?",
                "Very possibly: caffeine's effect can last six hours or more. Try moving it "
                "before 1 pm for two weeks, or switching the afternoon one to a decaf version, "
                "and see whether sleep improves.",
            ),
        ],
        "ask": [
            "What's my go-to drink at the café?",
            "What does {user} get when buying a hot drink?",
            "What do I sip to get through the day?",
        ],
        "change": [
            (
                "I've given up {old} and switched to {v}. My stomach is much happier. Is two a day "
                "still OK?",
                "For most healthy adults two a day is fine; the usual guidance caps caffeine at "
                "around 400 mg a day. If your stomach is sensitive, have them with food rather "
                "than on an empty stomach.",
            ),
            (
                "The new barista at the corner place got me hooked on {v}. Can you find a home "
                "recipe that's close?",
                "Tell me roughly how it tastes (sweet, strong, milky) and I'll adjust a recipe. "
                "Generally the biggest difference comes from good beans or leaves and getting "
                "the milk temperature right.",
            ),
            (
                "These days it's {v} for me every morning. Can you come up with a fun name for my "
                "mug?",
                'A few options: "The Daily Fuel", "Mug of Ambition", "Do Not Disturb (Yet)", '
                '"Liquid Patience", or "Morning Person Simulator".',
            ),
        ],
        "other": [
            (
                "My {rel} {name} lives on {v}. Is there a nice gift set for someone like that?",
                "A small tasting set from an independent roaster or tea shop, a nice cup, and "
                "something to go with it (biscuits or good chocolate) makes a lovely bundle.",
            ),
            (
                "I'm doing the café run for the office. {name} (my {rel}) always wants {v} — "
                "what's a polite way to collect everyone else's orders in the group chat?",
                "\"Café run at 10:30! Reply with your order by 10:15 and I'll grab it — I'll send "
                'the total afterwards." A deadline and a payment note keep it simple.',
            ),
        ],
        "ask_other": [
            "What does my {rel} drink?",
            "What's {name}'s café order?",
        ],
    },
    # --- facts that stay put --------------------------------------------------------------
    "allergy": {
        "state": [
            (
                "I'm hosting brunch on Sunday. Keep in mind I react badly to {v} — last time I "
                "ended up in urgent care. Can you plan a menu?",
                "Here's a brunch menu built to avoid it: a vegetable frittata or tofu scramble, "
                "roasted potatoes with rosemary, a yoghurt and berry bar, and a citrus salad. "
                "Check labels on anything pre-made and keep serving spoons separate.",
            ),
            (
                "What should I say to a waiter so they take it seriously? Even a trace of {v} "
                "makes my throat swell.",
                'Be direct and early: "I have a severe allergy — even a trace can put me in '
                'hospital. Can you check with the kitchen and tell me which dishes are safe?" '
                'Saying "severe" and "hospital" is what gets kitchens to act.',
            ),
            (
                "I'm flying soon and carry an EpiPen because of {v}. What do I need to know about "
                "taking it through airport security?",
                "Keep it in your hand luggage with the original pharmacy label, carry a doctor's "
                "letter, and tell security at the start of screening. Pack two if you can, and "
                "check the airline's policy before you fly.",
            ),
        ],
        "ask": [
            "Which ingredient could make me seriously ill?",
            "What is {user} allergic to?",
            "What must never go in a dish cooked for me?",
        ],
    },
    "hometown": {
        "state": [
            (
                "I grew up in {v} and I miss the food from there. Can you help me recreate a "
                "comforting home-style stew?",
                "Sure: brown the meat or mushrooms in batches, soften onion, carrot and celery, "
                "add a spoon of tomato paste, stock and herbs, then simmer low for two hours. "
                "Tell me the dish you remember and I'll adjust the spices.",
            ),
            (
                "School reunion back in {v}, where I spent my whole childhood. What do I say when "
                "everyone asks what I've been up to?",
                "Have a two-sentence answer ready (one about work or life, one about something "
                "you're enjoying right now), then turn the question back. People mostly want to "
                "reconnect, not compare.",
            ),
            (
                "My mum still lives in {v}, the town I was raised in, and wants to video-call "
                "more. What's the simplest tablet for someone who's 70?",
                "Choose a tablet with a large screen and a simple home-screen mode, set it up "
                "before you give it to her, put your contact on the home screen, and turn on "
                "auto-answer from family if it's available.",
            ),
        ],
        "ask": [
            "Where am I originally from?",
            "What is {user}'s hometown?",
            "Which place do my roots go back to?",
        ],
    },
    "condition": {
        "state": [
            (
                "I have {v}, so I want a workout plan that's gentle to start. Could you sketch "
                "three weeks?",
                "Week 1: three 20-minute sessions of walking plus light mobility. Week 2: 25 "
                "minutes, add simple bodyweight moves. Week 3: 30 minutes, two sessions with "
                "light weights. Stop if symptoms flare and check with your doctor first.",
            ),
            (
                "Since I was diagnosed with {v} I've been tired of explaining it at work. How "
                "much do I have to tell my manager?",
                "Usually only what affects your work and the adjustments you need — not the "
                'full medical detail. A short, practical conversation ("this is what helps me '
                'do my job well") is often enough; HR can help keep it confidential.',
            ),
            (
                "Managing {v} on holiday is always stressful. Can you make me a packing checklist?",
                "Checklist: enough medication for the trip plus a few days extra, split between "
                "two bags; a doctor's letter; your prescriptions; travel insurance that covers "
                "pre-existing conditions; and the local emergency number saved on your phone.",
            ),
        ],
        "ask": [
            "What chronic health problem do I live with?",
            "What medical issue does {user} have?",
            "Which long-term illness affects me?",
        ],
    },
    "degree": {
        "state": [
            (
                "I did my degree in {v}, which never comes up at work. How can I mention it on my "
                "CV so it looks relevant?",
                "Put it in one line under education and, in your summary, name the transferable "
                "skills it gave you — research, analysis, writing, handling data. Recruiters "
                "care about what you can do, not the exact title.",
            ),
            (
                "I majored in {v} and I'm considering a part-time master's. How do people "
                "balance that with a full-time job?",
                "Those who manage it protect fixed study slots (two evenings and a weekend "
                "morning), talk to their employer early about flexibility, and choose modules "
                "that connect to their job so the work overlaps.",
            ),
            (
                "An old classmate from my {v} course is visiting for a day. Fun things to do?",
                "Mix nostalgia with something new: lunch somewhere you'd have loved as students, "
                "a walk through a park or market, a museum or exhibition you'll both argue "
                "about, and a relaxed dinner to end.",
            ),
        ],
        "ask": [
            "What subject did I read at college?",
            "What was {user}'s field of study?",
            "What is my academic background?",
        ],
    },
    "birthday": {
        "state": [
            (
                "My birthday is on {v} and I'd like a small picnic this year. What food travels "
                "well?",
                "Sturdy picks: hand pies or sandwiches, grain salads, crudités with dips, cheese "
                "and crackers, a whole cake in its tin, and fruit that doesn't bruise. Bring a "
                "cool bag and a knife.",
            ),
            (
                "I'll be a year older on {v}, ugh. Help me plan a low-key dinner for eight?",
                "Keep it simple: one big main that cooks itself (a slow roast or a curry), a "
                "generous salad, bread, and a bought dessert. Lay the table the night before and "
                "let guests bring drinks.",
            ),
            (
                "Can you help me set reminders? {v} is my birthday and I always forget to book "
                "the day off.",
                "Set a yearly reminder six weeks before to request leave, another two weeks "
                "before to make plans, and one on the morning itself. Most calendar apps let you "
                "add several alerts to a single yearly event.",
            ),
        ],
        "ask": [
            "When was I born — which day of the year?",
            "What date should friends remember for {user}?",
            "When do I get cake and candles?",
        ],
    },
    "cuisine": {
        "state": [
            (
                "Nothing beats {v} food for me. Could you suggest a checklist for judging "
                "restaurant reviews before a date night?",
                "Look at recent reviews only, read the three-star ones (they're the most "
                "honest), check photos posted by diners rather than the restaurant, and look for "
                "mentions of noise level if you want to talk.",
            ),
            (
                "I want to learn to make {v} dishes at home. Which five pantry staples should I "
                "buy first?",
                "Tell me which dishes you'd like to start with and I'll tailor the list, but in "
                "general: the key sauce or paste, the right rice or noodles, the main dried "
                "spices, a good oil, and the fresh aromatics used most often.",
            ),
            (
                "For my birthday dinner I'd pick {v} every time. How do I book for a group of ten "
                "without stress?",
                "Book two to three weeks ahead, ask whether they do a set menu for groups (it "
                "speeds up ordering), confirm numbers two days before, and agree on splitting the "
                "bill before you arrive.",
            ),
        ],
        "ask": [
            "What kind of meal would I choose if I could have anything?",
            "Which country's cooking does {user} love most?",
            "What style of cuisine do I prefer?",
        ],
    },
    "fear": {
        "state": [
            (
                "I'm terrified of {v}. Is there a way to get over it gradually, like exposure "
                "therapy at home?",
                "Gradual exposure can work: build a ladder of situations from mildly to very "
                "uncomfortable, stay in each step until anxiety drops by half, and only then "
                "move up. A therapist trained in CBT makes it faster and safer.",
            ),
            (
                "My friends want to do something next weekend that involves {v}, and I panic just "
                "thinking about it. How do I say no without being a killjoy?",
                "Be honest and offer an alternative: \"That one's genuinely not for me — can I "
                'join you for lunch afterwards?" Friends usually care more about seeing you '
                "than about the activity.",
            ),
            (
                "Ever since I was little, anything to do with {v} has been my nightmare. Any "
                "breathing tricks for when I can't avoid it?",
                "Try box breathing: in for four, hold for four, out for four, hold for four, "
                "repeated a few times. A longer exhale than inhale calms the body quickly. "
                "Naming five things you can see also helps ground you.",
            ),
        ],
        "ask": [
            "What scares me the most?",
            "What is {user} afraid of?",
            "What phobia do I have?",
        ],
    },
    "author": {
        "state": [
            (
                "I've read everything {v} ever published. Who should I try next if I like that "
                "style?",
                "Tell me the book of theirs you loved most and why, and I'll tailor it. Good "
                "rules of thumb: look at who they've cited as influences, and at prize "
                "shortlists in the same years.",
            ),
            (
                "Book club is my pick this month and I'm torn between two {v} novels. How do I "
                "choose one that sparks discussion?",
                "Pick the one with a divisive character or an ambiguous ending — disagreement "
                "makes for the best discussion. Check the length too; a shorter book means more "
                "people actually finish it.",
            ),
            (
                "I want to reread {v} on holiday — is it worth buying nice hardback editions as "
                "a treat?",
                "If you reread often, yes: a good edition is nicer to hold and lasts decades. "
                "Second-hand bookshops and online used-book sellers often have beautiful "
                "editions for the price of a new paperback.",
            ),
        ],
        "ask": [
            "Whose books do I love most?",
            "Who is {user}'s favourite writer?",
            "Which novelist am I a big fan of?",
        ],
    },
    "heritage": {
        "state": [
            (
                "We spoke {v} at home when I was growing up, but mine is getting rusty. How can "
                "I keep it alive as an adult?",
                "Build it into routines: set your phone's language to it, listen to radio or "
                "podcasts in it while cooking, read the news in it once a week, and call a "
                "relative for a chat without switching.",
            ),
            (
                "My grandparents only speak {v}, so I translate at family dinners. Any tips for "
                "staying patient?",
                "Translate in short chunks rather than whole stories, let people see you're "
                'summarising, and take breaks. It\'s fine to say "give me a second" — '
                "interpreting is tiring work.",
            ),
            (
                "Growing up, {v} was all I heard at home — I still dream in it. Is it common to "
                "think in two languages?",
                "Very common. Bilingual people often switch the language of their thoughts "
                "depending on the topic, the people involved, or where they learned the words.",
            ),
        ],
        "ask": [
            "What was the first tongue I picked up as a child?",
            "Which is {user}'s native language?",
            "What do I talk in with my older relatives?",
        ],
    },
    "hobby": {
        "state": [
            (
                "Weekends are for {v} — it's the one thing that switches my brain off. Could you "
                "help me set up a small corner at home for it?",
                "Choose a spot with good natural light, a sturdy surface, storage within arm's "
                "reach (boxes or a pegboard), and a way to leave things out between sessions so "
                "you can start again without setting up.",
            ),
            (
                "I've been into {v} for years and a friend wants to start. How do I teach a "
                "beginner without overwhelming them?",
                "Start with one small project that gives a finished result in a single session, "
                "show rather than explain, and let them make mistakes. Leave the advanced "
                "techniques for the second or third time.",
            ),
            (
                "Could you write an Instagram caption for my latest {v} project? Something short "
                "and warm.",
                '"Slow hands, quiet mind. This one took its time and I loved every minute."',
            ),
        ],
        "ask": [
            "What do I do to unwind in my free time?",
            "What's {user}'s pastime?",
            "What creative activity fills my days off?",
        ],
    },
    "film": {
        "state": [
            (
                "I've watched {v} maybe fifteen times. Can you recommend films with a similar "
                "feel?",
                "Tell me what you love about it — the mood, the visuals, the characters — and "
                "I'll suggest a handful. Directors' other work and films from the same "
                "cinematographer are good places to start.",
            ),
            (
                "Hosting a screening night at home and I'm showing {v}, naturally — it's my "
                "comfort watch. Snack pairing ideas?",
                "Match the snacks to the setting of the story if you can, plus one sweet and one "
                "salty classic. Serve everything in small bowls before the lights go down so "
                "nobody rustles through the best scenes.",
            ),
            (
                "Can you write a short review of {v} in the voice of a pirate? I know it by heart.",
                '"Arr, this tale be a treasure chest of wonders! I laughed, I wept into me rum, '
                "and I'd sail through it again tomorrow. Five gold doubloons out of five!\"",
            ),
        ],
        "ask": [
            "Which movie is my all-time number one?",
            "What's {user}'s favourite film?",
            "What picture could I rewatch endlessly?",
        ],
    },
    "dream": {
        "state": [
            (
                "One day I'll make it to {v} — it's been on my list forever. How much should I "
                "save each month to get there in three years?",
                "Estimate the total (flights, stays, food, activities, a buffer of 15%) and divide "
                "by 36. Put that amount into a separate savings pot on payday so it happens "
                "automatically.",
            ),
            (
                "My screensaver is a photo of {v}, because I've wanted to go my whole life. When "
                "is the best season?",
                "It depends on what you want from the trip — weather, crowds and prices all "
                "shift by season. Shoulder seasons usually give the best balance of decent "
                "weather and fewer visitors.",
            ),
            (
                "If I ever get a sabbatical I'm spending it in {v}. How do people negotiate "
                "unpaid leave?",
                "Check your company's policy first, then propose a plan: dates well in advance, "
                "a handover, and how your work will be covered. Framing it as a way to come back "
                "refreshed helps.",
            ),
        ],
        "ask": [
            "Where is my bucket-list trip?",
            "Which destination does {user} dream of visiting?",
            "Where am I longing to travel someday?",
        ],
    },
    "wake": {
        "state": [
            (
                "I'm up at {v} every day, even weekends. What's a good breakfast I can prep the "
                "night before?",
                "Overnight oats, a batch of egg muffins, chia pudding, or a jar of yoghurt "
                "layered with fruit and granola. All keep in the fridge and take seconds in the "
                "morning.",
            ),
            (
                "My alarm goes off at {v} and I'm wrecked by 9 pm. How should I structure my "
                "evenings?",
                "Work backwards from the time you need to sleep: dinner about three hours before, "
                "screens off an hour before, and a short wind-down routine. Do the most demanding "
                "evening tasks early.",
            ),
            (
                "Being awake at {v} means I get an hour to myself before everyone else. What "
                "could I do with that time?",
                "Use it for something that matters but never gets done: reading, a creative "
                "project, exercise, language practice, or planning the day. Protect it from "
                "email — that's what makes it feel like yours.",
            ),
        ],
        "ask": [
            "What time do I get out of bed?",
            "When does {user}'s morning start?",
            "How early do I rise?",
        ],
    },
    "volunteer": {
        "state": [
            (
                "I volunteer {v} on Saturday mornings. Can you help me write a short post "
                "encouraging others to sign up?",
                '"Looking for a way to spend a few hours that actually matter? Come along on a '
                "Saturday morning — no experience needed, just turn up and we'll show you "
                'the ropes. Message me for details!"',
            ),
            (
                "Every other weekend I spend a few hours {v}. Should I list that on my CV?",
                'Yes, in a short "Volunteering" section: what you do, how often, and one skill '
                "or result it shows (reliability, teamwork, organising). Employers value it, "
                "especially for roles that involve people.",
            ),
            (
                "My Saturday shifts {v} are the highlight of my week. How do I stop feeling "
                "guilty when I have to skip one?",
                "Give notice early, help find a cover if you can, and remember that consistent "
                "volunteers who take breaks last longer than ones who burn out. One missed "
                "Saturday doesn't undo the rest.",
            ),
        ],
        "ask": [
            "What unpaid community work do I do?",
            "What good cause does {user} give time to?",
            "How do I help out for free in my spare hours?",
        ],
    },
    "boardgame": {
        "state": [
            (
                "Game night at mine on Friday — {v} is on the table, of course, it's my "
                "favourite. What snacks won't leave greasy fingers on the pieces?",
                "Go for clean-fingered snacks: popcorn in individual cups, grapes, pretzels, "
                "sushi or small wraps eaten with a pick, and chocolate that doesn't melt "
                "quickly. Keep drinks on a side table.",
            ),
            (
                "I'm teaching {v} to some new friends. How do I explain the rules in under five "
                "minutes?",
                "Start with how you win, then what you do on a turn, then one example turn. "
                "Leave edge cases until they come up, and play an open first round where "
                "everyone can ask questions.",
            ),
            (
                "I lose at {v} every week to the same person. Any strategy books or videos?",
                "Look for content from experienced players that reviews real games move by "
                "move; seeing why decisions were made teaches more than lists of tips. Also "
                "replay your own losses and note the turning point.",
            ),
        ],
        "ask": [
            "What do I love to play at the kitchen table?",
            "What's {user}'s top tabletop pick?",
            "Which pastime with a board and pieces do I enjoy most?",
        ],
    },
    "musician": {
        "state": [
            (
                "{v} has been on repeat for me since I was fifteen. Could you make me a playlist "
                "of similar artists?",
                "Happy to — tell me your three favourite tracks and I'll build around their "
                "sound. Looking at collaborators, producers and support acts from the same "
                "tours is a good way to find similar artists.",
            ),
            (
                "Could you help me write a wedding toast? I want to sneak in a reference to "
                "{v}, whose songs got me through my teens.",
                "Here's a structure: who you are, a short funny story about the couple, one "
                "sincere line about what makes them work, your lyric nod, then the toast. Keep "
                "it under three minutes.",
            ),
            (
                "I'd queue all night for {v} tickets. How do presale codes usually work?",
                "Presales usually go to fan-club members, newsletter subscribers or certain card "
                "holders; you get a code a day or two before general sale. Sign up early and "
                "have payment details saved before the sale opens.",
            ),
        ],
        "ask": [
            "Who is my favourite musical act?",
            "Which artist does {user} listen to most?",
            "Whose music means the most to me?",
        ],
    },
    "pet": {
        "state": [
            (
                "I have {v} and I'm away for three days next month. Should I get a sitter or use "
                "a boarding place?",
                "A home sitter is less stressful for most animals because the routine stays the "
                "same; boarding is better if yours needs supervision around the clock. Either "
                "way, do a short trial visit first.",
            ),
            (
                "What houseplants are safe to keep around {v}? I don't want anything toxic at "
                "home.",
                "Generally safe choices include spider plants, Boston ferns, calatheas, parlour "
                "palms and most herbs like basil. Avoid lilies, pothos and sago palms, and "
                "double-check any new plant on a poison-control list.",
            ),
            (
                "Our vet bill was huge this month — {v} needed tests. Is insurance worth it?",
                "It's worth it if an unexpected bill of a few thousand would be hard to cover. "
                "Compare lifetime policies rather than annual ones, check exclusions for "
                "existing conditions, and look at the excess.",
            ),
        ],
        "ask": [
            "What animal shares my home?",
            "What kind of companion creature does {user} look after?",
            "Who lives with me that isn't human?",
        ],
    },
}

#: Dated events (category 2): "state" pairs use {when}; "ask" asks for the date.
EVENTS = {
    "race": {
        "state": [
            (
                "I ran my first {v} {when}! My legs are destroyed. What should I eat and do this "
                "week to recover?",
                "Well done! First: eat a proper meal with protein and carbs, drink steadily, go "
                "for a gentle walk to ease stiffness, and get an early night. No running for at "
                "least a few days.",
            ),
            (
                "Finished the {v} {when} — slower than I hoped but I didn't stop once. How soon "
                "can I train again?",
                "Congratulations on finishing strong. A rough guide is one easy day per "
                "kilometre-heavy effort: take a few rest days, then a week of easy sessions "
                "before anything hard.",
            ),
        ],
        "ask": [
            "When did I take part in that long-distance running event?",
            "On what date was {user}'s big race?",
        ],
    },
    "concert": {
        "state": [
            (
                "Saw {v} live {when} and my ears are still ringing. How do I know if it's "
                "something to worry about?",
                "Ringing after a loud gig usually fades within a day or two. If it lasts longer, "
                "or comes with muffled hearing or pain, see a doctor. Earplugs made for concerts "
                "keep the sound clear and protect your hearing next time.",
            ),
            (
                "The {v} gig {when} was unreal. Can you help me write a caption for my photos?",
                '"Still not over it. Loud, sweaty, perfect — one of those nights you keep '
                'forever."',
            ),
        ],
        "ask": [
            "When did I last go to a live show?",
            "What day did {user} see {v} perform?",
        ],
    },
    "wedding": {
        "state": [
            (
                "Went to {v} wedding {when} and danced until 2 am. How do I get my sleep back on "
                "track?",
                "Get up at your normal time even if you're tired, get daylight in the morning, "
                "skip long naps (20 minutes at most), and go to bed at your usual time. Two or "
                "three days and you'll be back.",
            ),
            (
                "I gave a speech at {v} wedding {when} and people laughed in the right places! "
                "Now I've been asked to host another event — tips?",
                "Congratulations! Hosting is mostly about keeping things moving: a clear running "
                "order, short links between items, and a few ready lines for when something runs "
                "late.",
            ),
        ],
        "ask": [
            "When was the ceremony where somebody I know got hitched?",
            "On which date did {user} attend a marriage celebration?",
        ],
    },
    "interview": {
        "state": [
            (
                "Had the interview at {v} {when}. They said they'd reply within two weeks. Should "
                "I send a follow-up email now or wait?",
                "Send a short thank-you email within a day: thank them for their time, mention "
                "one thing from the conversation, and restate your interest. Then wait until the "
                "two weeks have passed before chasing.",
            ),
            (
                "The panel at {v} grilled me for an hour {when}. How do I stop replaying every "
                "answer in my head?",
                "Write down the questions and what you'd say better next time — that turns "
                "rumination into preparation. Then do something absorbing; the decision is out "
                "of your hands now.",
            ),
        ],
        "ask": [
            "When did I have that job-application meeting with {v}?",
            "On which day was {user} assessed as a candidate by {v}?",
        ],
    },
    "dental": {
        "state": [
            (
                "Got a wisdom tooth pulled {when} and my cheek looks like a hamster's. What can I "
                "eat?",
                "Soft, cool foods for the first days: yoghurt, smoothies (no straw), mashed "
                "potato, scrambled eggs, soup that isn't hot. Avoid crunchy and spicy things, "
                "and rinse gently with salt water after the first day.",
            ),
            (
                "The dentist took out my wisdom tooth {when}. How long does the swelling usually "
                "last?",
                "Swelling usually peaks on day two or three and fades over a week. Cold packs in "
                "the first 48 hours, then warm compresses, help. Call the dentist if pain gets "
                "worse after day three.",
            ),
        ],
        "ask": [
            "When did I have oral surgery?",
            "What day did {user} get that molar extracted?",
        ],
    },
    "trip": {
        "state": [
            (
                "I went to {v} {when} for a quick getaway and it was lovely. Can you help me write "
                "a thank-you note to the guesthouse owner?",
                '"Thank you for such a warm welcome! The room was spotless, breakfast was a '
                "highlight, and your tips made our stay. We'll be back — and we'll be "
                'recommending you to everyone."',
            ),
            (
                "Took the early train to {v} {when} just for the day. Can you recommend a good "
                "travel-journal app?",
                "Look for one that adds photos and location automatically, works offline, and "
                "exports to PDF or a printed book. Write three lines each evening while it's "
                "fresh — that's what you'll treasure later.",
            ),
        ],
        "ask": [
            "When did I last visit {v}?",
            "When was {user}'s short break in {v}?",
        ],
    },
    "diving": {
        "state": [
            (
                "Got my open-water diving certificate {when}! What should I do to keep my skills "
                "fresh?",
                "Dive again within a few months, log every dive, and consider a refresher "
                "session in a pool before any trip after a long break. An advanced course is a "
                "good next step once you have ten or so dives.",
            ),
            (
                "Passed my scuba certification {when}, finally. Do I need to buy my own gear?",
                "Not at first: rent the big items and buy a well-fitting mask, fins and a dive "
                "computer if you'll dive regularly. Fit matters more than brand.",
            ),
        ],
        "ask": [
            "When did I qualify to go underwater with a tank?",
            "What date did {user} earn the diver's licence?",
        ],
    },
    "ankle": {
        "state": [
            (
                "I twisted my ankle {when} stepping off a kerb. It's swollen — ice or heat?",
                "Ice for the first two days (20 minutes at a time, wrapped in a cloth), keep it "
                "raised, and rest it. If you can't put weight on it or the pain is severe, get "
                "an X-ray to rule out a fracture.",
            ),
            (
                "Rolled my ankle at the park {when} and it's turning purple. When should I see a "
                "doctor?",
                "See a doctor if you can't walk four steps, if there's tenderness on the bone, "
                "or if it isn't improving after a few days. Bruising alone is common with "
                "sprains.",
            ),
        ],
        "ask": [
            "When did I hurt my foot?",
            "On which day did {user} get injured?",
        ],
    },
    "dinner": {
        "state": [
            (
                "I hosted eight people for dinner {when} and somehow everything was ready on "
                "time. How do I store the leftovers safely?",
                "Cool them within two hours, split big pots into shallow containers, label with "
                "the date, and use within three days or freeze. Reheat until piping hot, and only "
                "once.",
            ),
            (
                "Had friends over for a big meal {when} — the dessert collapsed but everyone "
                "laughed. What's a foolproof make-ahead dessert for next time?",
                "Tiramisu, a fruit crumble, panna cotta, or a chocolate mousse are all made the "
                "day before and hard to get wrong.",
            ),
        ],
        "ask": [
            "When did I cook for a crowd at home?",
            "What day did {user} entertain guests?",
        ],
    },
    "parents": {
        "state": [
            (
                "I was at my parents' place {when} and noticed Dad struggling with the stairs. "
                "What small changes make a house safer for older people?",
                "Grab rails on both sides of the stairs, brighter bulbs and night lights, "
                "non-slip mats in the bathroom, removing loose rugs, and moving everyday items "
                "to waist height. A local falls-prevention service may do a free home check.",
            ),
            (
                "Spent the day with Mum and Dad {when}. They want a video doorbell — which kinds "
                "are easiest to use?",
                "Choose a battery model that doesn't need wiring, with a simple app and a chime "
                "that plugs into the wall. Set it up for them and turn off motion alerts they "
                "don't need.",
            ),
        ],
        "ask": [
            "When did I last see my folks?",
            "On what day did {user} visit the family home?",
        ],
    },
    "flu": {
        "state": [
            (
                "I came down with a fever {when} and I'm still wiped out. When is it safe to go "
                "back to the office?",
                "A common rule is 24 hours without a fever and without fever-reducing "
                "medication, and feeling well enough to work. Rest and fluids in the meantime.",
            ),
            (
                "Tested positive for flu {when}. What should I keep in the cupboard for the next "
                "few days?",
                "Paracetamol or ibuprofen, a thermometer, oral rehydration sachets, easy food "
                "(soups, crackers, bananas), honey and lemon, and tissues. Call a doctor if you "
                "get short of breath.",
            ),
        ],
        "ask": [
            "When did I fall ill?",
            "When did {user} catch that bug?",
        ],
    },
    "talk": {
        "state": [
            (
                "I gave my talk at the regional conference {when} — forty people came! How do I "
                "turn the slides into a blog post?",
                "Turn each section of slides into one paragraph, keep the two or three best "
                "visuals, add an introduction that says why it matters, and end with links. "
                "Publish within a week while people remember the talk.",
            ),
            (
                "Presented to the whole department {when} and my voice only shook a little. How "
                "do I get less nervous next time?",
                "Rehearse out loud three times, the first minute most of all; arrive early to "
                "check the room; and remember that the audience wants you to do well.",
            ),
        ],
        "ask": [
            "When did I speak in front of an audience?",
            "What day was {user}'s presentation?",
        ],
    },
    "sofa": {
        "state": [
            (
                "The new sofa was delivered {when} and it's slightly too big for the room. How "
                "do I rearrange a small living room?",
                "Put the largest piece against the longest wall, float a smaller rug in front to "
                "define the space, use wall-mounted shelves instead of cabinets, and keep a clear "
                "walkway of about 80 cm.",
            ),
            (
                "Our couch finally arrived {when} after eight weeks of waiting. How do I protect "
                "the fabric?",
                "Use a fabric protector spray suitable for the material, keep it out of direct "
                "sunlight, vacuum it weekly, and deal with spills by blotting, not rubbing.",
            ),
        ],
        "ask": [
            "When did the new settee get to my place?",
            "On what date did {user}'s furniture delivery come?",
        ],
    },
    "camping": {
        "state": [
            (
                "We camped by a lake {when} and it rained all night. How do I dry out a tent "
                "properly?",
                "Pitch it again in the garden or hang it indoors until completely dry, inside and "
                "out, before packing it away — otherwise mildew sets in within days.",
            ),
            (
                "Spent a night in a tent {when} for the first time in years. Tips for sleeping "
                "better outdoors?",
                "A good sleeping mat matters more than the bag, wear a hat, eat something warm "
                "before bed, and bring earplugs. Pitch on flat ground with your head uphill.",
            ),
        ],
        "ask": [
            "When did I last sleep under canvas?",
            "When did {user} go camping?",
        ],
    },
}

#: Multi-hop pairs (category 1): "a" links the role to a name, "b" says something about the
#: name only, "ask" refers to the role.
MULTIHOP = {
    "child": {
        "a": [
            (
                "My {child} {name} needs a costume for the school play. Any ideas that can be "
                "made in one evening?",
                "Quick costume ideas: a cardboard-box robot, a cape and mask superhero, an animal "
                "with felt ears and a painted nose, or a paper-crown king or queen. Tell me the "
                "play and I'll get more specific.",
            ),
            (
                "Parents' evening for my {child} {name} is on Thursday. What questions should I "
                "ask the teacher?",
                "Useful ones: what's going well, where they find things hard, how they get on "
                "with others, and one thing you can do at home to help. Ask for examples rather "
                "than grades.",
            ),
        ],
        "b": [
            (
                "{name} got picked for the {v} team! Practices are Tuesdays and Thursdays. How "
                "do I make sure homework still gets done?",
                "Set a fixed homework slot on practice days (straight after school or after "
                "dinner), keep weekends light, and check the week's workload every Sunday so "
                "nothing piles up.",
            ),
            (
                "{name} has a {v} tournament this weekend. What should I pack for a long day of "
                "waiting around?",
                "Pack water, snacks and a proper lunch, layers, a folding chair, a phone charger, "
                "something to read, and a spare kit in case of spills.",
            ),
        ],
        "ask": [
            "What does my {child} compete in?",
            "Which sport does {user}'s {child} play?",
        ],
    },
    "pet": {
        "a": [
            (
                "Our {species}, {name}, keeps waking me up at 5 am for breakfast. How do I change "
                "that?",
                "Don't respond to the early wake-ups (even to say no), feed at a consistent later "
                "time, and consider an automatic feeder. It usually takes one to two weeks.",
            ),
            (
                "I need a name tag for my {species} {name}. What info should go on it?",
                "Your phone number is the most important, then a short line like \"I'm "
                'microchipped". Keep it short so the text is large enough to read.',
            ),
        ],
        "b": [
            (
                "The vet says {name} has {v}. What questions should I ask at the follow-up?",
                "Ask about treatment options and their costs, what recovery looks like, signs "
                "that mean you should call straight away, and how to keep the animal comfortable "
                "at home.",
            ),
            (
                "{name} was diagnosed with {v} on Monday. How do I keep the little one calm "
                "during recovery?",
                "Keep the routine predictable, a quiet resting spot, short gentle activity only, "
                "and puzzle feeders to keep the mind busy. Ask the vet about calming aids if "
                "needed.",
            ),
        ],
        "ask": [
            "What's wrong with my {species}'s health?",
            "What did the check-up find with {user}'s {species}?",
        ],
    },
    "trip_friend": {
        "a": [
            (
                "I'm going to {city} in {month} for a work conference. What should I pack for "
                "four days?",
                "Pack two smart outfits and one casual, comfortable shoes for standing, a "
                "charger and power bank, business cards or a digital version, and a light "
                "layer for cold conference rooms.",
            ),
            (
                "Booked travel to {city} for {month} — it's for a trade fair, three days on a "
                "stand. How do I keep my energy up?",
                "Sleep well the night before, wear comfortable shoes, sit down for ten minutes "
                "every couple of hours, keep water and snacks at the stand, and keep caffeine to "
                "the mornings.",
            ),
        ],
        "b": [
            (
                "My old university friend {name} just moved to {city}. Can you help me write a "
                "message to reconnect after years of silence?",
                "\"Hey! It's been far too long — I heard about your move and thought of you. "
                "How's it going? I'd love to catch up properly, even just a call.\"",
            ),
            (
                "{name}, who I shared a flat with years ago, is living in {city} now. What's a "
                "good gift to post to someone's new home?",
                "Something small and practical for a new place: a nice candle, a plant that "
                "posts well, a good tea towel, or a local treat from your area.",
            ),
        ],
        "ask": [
            "Who could I catch up with on my {month} trip?",
            "Who could {user} look up while travelling in {month}?",
        ],
    },
    "doctor": {
        "a": [
            (
                "I've got an appointment with my GP, Dr. {name}, on Friday. How do I make the "
                "most of ten minutes?",
                "Write down your main concern first, symptoms with dates, medication you take, "
                "and two or three questions. Start with the most important thing, not the last.",
            ),
            (
                "Dr. {name} has been my family doctor for years and I'd like to send a thank-you "
                "card. What should I write?",
                '"Thank you for years of patient, kind care — it has made a real difference. '
                'With warm wishes." Add one specific moment if there is one.',
            ),
        ],
        "b": [
            (
                "Dr. {name} told me to {v}. How do I actually stick to that?",
                "Make it concrete and small: decide exactly when and how, tie it to something "
                "you already do every day, and track it on a calendar for a month.",
            ),
            (
                "Following up on what Dr. {name} said: I have to {v}. Can you make it into a "
                "simple weekly plan?",
                "Sure — pick three fixed days to start, add a reminder on your phone, review at "
                "the end of each week, and increase only when it feels easy.",
            ),
        ],
        "ask": [
            "What change has my general practitioner asked me to make?",
            "What health advice did {user}'s regular physician give?",
        ],
    },
    "manager": {
        "a": [
            (
                "My new manager, {name}, started this week. How do I set up a good first "
                "one-to-one?",
                "Ask about their priorities and how they like to communicate, share what you're "
                "working on and where you need support, and agree how often you'll meet.",
            ),
            (
                "I report to {name} now after the reorganisation. What should I ask in our first "
                "meeting?",
                "Good questions: what success looks like in six months, how they prefer updates, "
                "what worries them about the team, and how decisions get made.",
            ),
        ],
        "b": [
            (
                "{name} wants everyone to {v} from now on. How do I raise concerns without "
                "sounding negative?",
                "Acknowledge the goal first, then describe the specific problem with an example, "
                "and propose an alternative. Ask a question rather than stating an objection.",
            ),
            (
                "New rule from {name}: we all have to {v}. Can you help me plan my week around it?",
                "Let's block the fixed parts first, then put deep work in the longest free "
                "stretches and admin in the gaps. Send me your usual week and I'll draft it.",
            ),
        ],
        "ask": [
            "What does my boss expect of the team now?",
            "What new requirement has {user}'s line manager introduced?",
        ],
    },
}

#: Relative days for dated events, each with what it means (see generate.py).
WHEN = {
    "today": "this morning",
    "yesterday": "yesterday",
    "two_days": "two days ago",
    "weekend": "last weekend",
    "saturday": "on Saturday",
    "last_week": "last week",
}

GREETINGS = [
    ("Hi again!", "Hi! Good to hear from you. What can I help with today?"),
    ("Morning. Got a few things to sort out today.", "Good morning! Go ahead, one at a time."),
    ("Hey, a couple of quick questions.", "Sure, fire away."),
    ("Hello! Back with more questions, sorry.", "No need to apologise — what's on your mind?"),
    ("Evening. Can you help with some planning?", "Of course. What are we planning?"),
]

FOLLOWUPS = [
    ("Thanks, that's really helpful.", "You're welcome! Let me know how it goes."),
    (
        "Could you make that a bit shorter?",
        "Sure — the short version: start with the first step, skip the extras, and adjust once "
        "you see how it works for you.",
    ),
    (
        "Perfect, I'll try that tonight.",
        "Good luck! If something doesn't work the way you expected, tell me what happened and "
        "we'll adjust.",
    ),
    ("Got it, that makes sense.", "Great. Shout if anything's unclear."),
    ("Good idea, I hadn't thought of that.", "Happy to help — good luck with it!"),
    ("Great, that's exactly what I needed.", "Glad to hear it!"),
    (
        "Hmm, I'm not sure that would work for me.",
        "Fair enough — tell me what doesn't fit (time, money, space, taste) and I'll suggest "
        "something different.",
    ),
    (
        "Can you put that in a list I can screenshot?",
        "Here it is: 1) the first step, 2) the main task, 3) a quick check at the end. Short "
        "enough for one screen.",
    ),
    ("Ok thanks!", "Any time."),
]

#: Help-seeking exchanges without personal facts: user and assistant turns, user first.
FILLERS = [
    [
        "Can you explain the difference between a list and a tuple in Python?",
        "A list is mutable — you can add, remove and change items — while a tuple is immutable "
        "once created. Use tuples for fixed records (like coordinates) and as dictionary keys; "
        "use lists for collections that change.",
        "And when would I use a set?",
        "When you need unique items or fast membership checks: `x in my_set` is much faster than "
        "on a list for large collections. Sets are unordered, so don't rely on their order.",
    ],
    [
        "My Python script says `KeyError: 'date'` when reading a CSV. What does that mean?",
        "It means the row dictionary has no key called 'date' — usually the header is spelled "
        'differently ("Date", " date" with a space, or a BOM at the start of the file). Print '
        "`reader.fieldnames` to see the exact names.",
        "It was a BOM! How do I get rid of it?",
        'Open the file with `encoding="utf-8-sig"` — it strips the BOM automatically.',
    ],
    [
        "How do I write a SQL query that counts orders per customer, only for customers with more "
        "than five orders?",
        "Group and filter with HAVING:\n\nSELECT customer_id, COUNT(*) AS orders\nFROM orders\n"
        "GROUP BY customer_id\nHAVING COUNT(*) > 5\nORDER BY orders DESC;",
    ],
    [
        "What's a good way to structure a git commit message?",
        'A short summary line (about 50 characters, imperative mood: "Fix login redirect"), a '
        "blank line, then a body explaining why the change was needed and anything surprising. "
        "The diff already shows what changed.",
    ],
    [
        "Can you help me write a polite email asking a client to pay an overdue invoice?",
        "Here's a draft:\n\nSubject: Invoice #[number] — friendly reminder\n\nHi [Name], I hope "
        "you're well. A quick reminder that invoice #[number] for [amount], due on [date], is "
        "still outstanding. I've attached a copy for convenience. Could you let me know when I "
        "can expect payment? Many thanks, [Your name]",
        "Can you make it a bit firmer? It's the second reminder.",
        "Sure: \"...is now [X] days overdue. Please arrange payment by [date]. If there's an "
        'issue with the invoice, let me know today so we can resolve it." Firm, but still '
        "professional.",
    ],
    [
        "How do I say no to a meeting without sounding rude?",
        "Offer a reason and an alternative: \"I won't be able to join — I'm focused on [X] this "
        'week. Could you share the notes, or I can send my input in writing beforehand?"',
    ],
    [
        "What's the best way to prepare for a performance review?",
        "Gather evidence of your results over the period, note feedback you've received, think "
        "about one or two goals for next year, and prepare a question about your development. "
        "Go in ready to listen as much as to talk.",
    ],
    [
        "Could you summarise the main points of the Pomodoro technique?",
        "Work in focused 25-minute blocks, take a 5-minute break after each, and a longer 15–30 "
        "minute break after four. One task per block, and write down distractions instead of "
        "acting on them.",
        "Does it work for creative work?",
        "Some people find 25 minutes too short for deep creative work — try 50/10 instead. The "
        "point is a fixed focus period with a real break, not the exact numbers.",
    ],
    [
        "Give me an easy recipe for a weeknight pasta with what's usually in the cupboard.",
        "Aglio e olio: cook spaghetti; meanwhile gently fry sliced garlic and chilli flakes in "
        "plenty of olive oil until golden. Toss the pasta in the oil with a splash of pasta "
        "water, add parsley if you have it, and finish with lemon zest.",
    ],
    [
        "How long do cooked rice leftovers keep in the fridge?",
        "Up to a day is the safest advice. Cool rice quickly (within an hour), refrigerate it, "
        "and reheat only once until piping hot — rice can carry bacteria whose toxins survive "
        "reheating.",
    ],
    [
        "What can I make with three overripe bananas?",
        "Banana bread is the classic, but also banana pancakes, a smoothie base (freeze slices "
        "first), banana oat cookies, or a quick banana and cinnamon porridge.",
        "Banana bread it is. Oil or butter?",
        "Both work: oil gives a moister loaf that stays soft longer, butter gives more flavour. "
        "Half and half is a good compromise.",
    ],
    [
        "How do I get a crispy skin when roasting potatoes?",
        "Parboil them for 8–10 minutes, drain and shake in the pan to rough up the edges, then "
        "roast in very hot oil at 220 °C, turning once. Don't crowd the tray.",
    ],
    [
        "I'm planning four days in Rome. What would a relaxed itinerary look like?",
        "Day 1: the historic centre on foot (Pantheon, Piazza Navona, Trevi). Day 2: the "
        "Colosseum and Forum in the morning, Trastevere in the evening. Day 3: the Vatican "
        "Museums early, then a slow afternoon in Villa Borghese. Day 4: a market, a neighbourhood "
        "like Monti, and a long lunch.",
        "Do I need to book the Vatican in advance?",
        "Yes, book timed tickets online a few weeks ahead and go for the earliest slot — queues "
        "without a booking can take hours.",
    ],
    [
        "What should I always pack in hand luggage for a long-haul flight?",
        "Medication, chargers and a power bank, a change of underwear and a T-shirt, travel "
        "documents, a refillable bottle, headphones, a warm layer, and any valuables.",
    ],
    [
        "Is travel insurance really worth it for a short European trip?",
        "For most people yes, mainly for medical cover and cancellations. If you have a premium "
        "bank account or card, check whether it already includes some cover before buying.",
    ],
    [
        "How do I find cheap train tickets?",
        "Book as early as the tickets are released, travel off-peak, check split ticketing, look "
        "at railcards if your country has them, and set price alerts on a booking app.",
    ],
    [
        "I've had a headache most afternoons this week. Any common causes?",
        "Common ones are dehydration, screen strain, skipped meals, poor sleep, caffeine timing "
        "and tension in the neck and shoulders. Try water, regular breaks from the screen and a "
        "proper lunch for a few days. See a doctor if it's severe or keeps getting worse.",
    ],
    [
        "How much water should I actually drink per day?",
        "There's no single number; most adults do fine with drinking to thirst, which usually "
        "lands around 1.5–2 litres from drinks, more in hot weather or when exercising. Pale "
        "yellow urine is a good sign you're well hydrated.",
    ],
    [
        "What are some good stretches for a stiff lower back after sitting all day?",
        "Try knee-to-chest stretches, cat–cow, a gentle seated twist, child's pose and a hip "
        "flexor lunge stretch — 30 seconds each. Standing up every 30–45 minutes helps even "
        "more.",
    ],
    [
        "I can't fall asleep before 1 am. Any tips that actually work?",
        "Keep the same wake-up time every day (even weekends), get daylight early, cut caffeine "
        "after noon, and dim screens an hour before bed. If you're awake for more than 20 "
        "minutes, get up and do something calm until sleepy.",
    ],
    [
        "Gift ideas for a colleague who is leaving, budget around thirty pounds?",
        "A nice notebook and pen, a plant, a good coffee or tea selection, a book related to "
        "their next adventure, or a group card plus a voucher everyone chips into.",
    ],
    [
        "What's a thoughtful gift for someone who says they don't want anything?",
        "Experiences and consumables: a meal out together, tickets to something, a nice food "
        "hamper, or an offer of your time (cooking dinner, helping with a project).",
    ],
    [
        "Can you suggest a housewarming gift that's not a candle?",
        "A good olive oil and bread board, a hardy plant, a local-area guidebook, a set of nice "
        "tea towels, or a framed map of their new neighbourhood.",
    ],
    [
        "How do I start an emergency fund?",
        "Open a separate easy-access savings account, set up an automatic transfer on payday "
        "(even a small one), and aim first for one month of essential costs, then three.",
        "Should I pay off my credit card first?",
        "Usually keep a small buffer first (a few hundred), then clear high-interest debt, then "
        "build the fund further. Card interest is almost always higher than savings interest.",
    ],
    [
        "What's the difference between an index fund and an ETF?",
        "An index fund tracks an index and is bought at the end-of-day price; an ETF can track "
        "the same index but trades on the stock market during the day like a share. Costs are "
        "often similar; check the fees.",
    ],
    [
        "How do I get rid of mould on a bathroom ceiling?",
        "Wear gloves and a mask, spray a mould remover or diluted bleach, leave it for 10 "
        "minutes, wipe, and let it dry. Then fix the cause: better ventilation, running the fan "
        "during and after showers.",
    ],
    [
        "My kitchen sink drains slowly. What can I try before calling a plumber?",
        "Pour boiling water down it, then try a plunger. If that fails, clean the U-bend under "
        "the sink (bucket underneath!). Baking soda and vinegar can help with minor build-up.",
    ],
    [
        "What's the best way to keep basil alive on a windowsill?",
        "Lots of light, water when the top of the soil is dry, and pinch off the tops regularly "
        "so it grows bushy. Supermarket pots are overcrowded — split them into three pots.",
    ],
    [
        "Can you explain what a VPN actually does?",
        "It encrypts your internet traffic and sends it through a server run by the VPN "
        "provider, so your network (like café Wi-Fi) can't see what you're doing and websites "
        "see the VPN's address. It doesn't make you anonymous.",
    ],
    [
        "How do I make a strong password I can actually remember?",
        "Use a passphrase of four or five random words, like a silly sentence, and a password "
        "manager for everything else. Turn on two-factor authentication for important "
        "accounts.",
    ],
    [
        "My laptop fan is constantly loud. What should I check?",
        "Check which processes use the most CPU, clean dust from the vents with compressed "
        "air, use it on a hard surface, and check for system updates. A browser with many tabs "
        "is a common culprit.",
    ],
    [
        "What's a good way to learn to touch type as an adult?",
        "Use a free typing tutor for 15 minutes a day, focus on accuracy before speed, and stop "
        "looking at the keyboard (cover your hands if needed). Most people see big gains in "
        "three to four weeks.",
    ],
    [
        "Can you recommend a way to remember what I read in non-fiction books?",
        "After each chapter write three sentences in your own words, revisit your notes a week "
        "later, and explain one idea to somebody else. Teaching is the strongest memory aid.",
    ],
    [
        "Explain compound interest like I'm twelve.",
        "If you save £100 and earn 10% a year, after a year you have £110. Next year you earn 10% "
        "on £110, not £100 — so you get £11. Your interest starts earning interest, and the "
        "growth speeds up over time.",
    ],
    [
        "What's a simple way to plan meals for the week?",
        "Pick five dinners on Sunday, reuse ingredients across them, write one shopping list, "
        "and cook double portions twice so you have leftovers for lunches.",
    ],
    [
        "How do I politely leave a group chat that's too noisy?",
        "Mute it first — that often solves it. If you want to leave, a short message works: "
        '"Stepping out of here to cut down on notifications — message me directly any time!"',
    ],
    [
        'Can you check this sentence: "Their going to the meeting tomorrow, aren\'t they?"',
        'It should be "They\'re going to the meeting tomorrow, aren\'t they?" — "they\'re" is '
        'short for "they are".',
    ],
    [
        "What's a good structure for a five-minute talk?",
        "Hook (30 seconds), the problem (1 minute), your main idea with one example (2.5 "
        "minutes), what you want the audience to do (1 minute). One idea is enough for five "
        "minutes.",
    ],
    [
        "How do I clean a cast iron pan without ruining it?",
        "Hot water and a brush or scraper while it's still warm, a tiny bit of soap is fine, dry "
        "it on the hob, then rub in a thin layer of oil. Avoid soaking it.",
    ],
    [
        "What's the difference between baking soda and baking powder?",
        "Baking soda needs an acid in the recipe (buttermilk, yoghurt, lemon) to react; baking "
        "powder already contains the acid. They aren't directly interchangeable.",
    ],
    [
        "Can you write a short out-of-office message for a week's holiday?",
        "\"Thanks for your email. I'm out of the office until [date] with limited access to email. "
        "For urgent matters please contact [name] at [email]. I'll reply when I'm back.\"",
    ],
    [
        "How can I make my small bedroom feel bigger?",
        "Light walls, a mirror opposite the window, a bed with storage underneath, wall-mounted "
        "lights instead of lamps on tables, and fewer, larger pieces of furniture.",
    ],
    [
        "How do I write a regular expression that matches an email address roughly?",
        "A pragmatic pattern is `^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$` — something, an @, something, a "
        "dot, something. Fully validating emails with a regex isn't worth it; send a "
        "confirmation email instead.",
    ],
    [
        "Why does my JavaScript `setTimeout` inside a loop print the same number every time?",
        "Because the callbacks run after the loop has finished and all share the same variable. "
        "Declare the loop variable with `let` instead of `var` so each iteration gets its own "
        "copy.",
    ],
    [
        "What's the best way to remove a red wine stain from a carpet?",
        "Blot (don't rub) with a clean cloth, pour a little cold water and keep blotting, then "
        "apply a mix of washing-up liquid and white vinegar. Rinse with cold water and blot "
        "dry.",
    ],
]
