"""Values the generator draws from: slot values, people's names, relations, event details.

A value is ``(english, chinese)`` or ``(english, chinese, mixed)``: the form written in an
English turn, in a Chinese turn, and in the Chinese of a user who keeps English terms ("我在吃
keto"); without a third form the mixed writer uses the Chinese one. Slots whose values depend on
where the user lives have a ``west`` and a ``china`` pool; the others one shared ``any`` pool.
Nothing here is taken from another data set.
"""

from __future__ import annotations

#: Slots that a user can state, and later change (category 6) or share with someone else
#: (category 7, for the slots whose phrase tables have "other" wordings).
CHANGEABLE = {
    "city": {
        "west": [
            ("Lisbon", "里斯本"),
            ("Porto", "波尔图"),
            ("Manchester", "曼彻斯特"),
            ("Denver", "丹佛"),
            ("Toronto", "多伦多"),
            ("Melbourne", "墨尔本"),
            ("Edinburgh", "爱丁堡"),
            ("Austin", "奥斯汀"),
            ("Dublin", "都柏林"),
            ("Rotterdam", "鹿特丹"),
            ("Vancouver", "温哥华"),
            ("Seattle", "西雅图"),
            ("Bristol", "布里斯托"),
            ("Montreal", "蒙特利尔"),
        ],
        "china": [
            ("Hangzhou", "杭州"),
            ("Chengdu", "成都"),
            ("Shenzhen", "深圳"),
            ("Nanjing", "南京"),
            ("Xiamen", "厦门"),
            ("Suzhou", "苏州"),
            ("Wuhan", "武汉"),
            ("Xi'an", "西安"),
            ("Qingdao", "青岛"),
            ("Chongqing", "重庆"),
            ("Dalian", "大连"),
            ("Changsha", "长沙"),
            ("Kunming", "昆明"),
        ],
    },
    "job": {
        "any": [
            ("a nurse", "护士"),
            ("a software engineer", "软件工程师", "software engineer"),
            ("a secondary-school chemistry teacher", "中学化学老师"),
            ("an accountant", "会计"),
            ("a physiotherapist", "康复治疗师"),
            ("an architect", "建筑师"),
            ("a pastry chef", "甜点师"),
            ("a paralegal", "律师助理"),
            ("a UX designer", "UX设计师", "UX designer"),
            ("an electrician", "电工"),
            ("a pharmacist", "药剂师"),
            ("a data analyst", "数据分析师", "data analyst"),
            ("a product manager", "产品经理", "PM"),
            ("a journalist", "记者"),
            ("a vet", "兽医"),
        ],
    },
    "employer": {
        "west": [
            ("Halvorsen Logistics", "哈尔沃森物流"),
            ("Brightwater Insurance", "明水保险"),
            ("Kestrel Games", "红隼游戏"),
            ("Northfield Hospital", "北田医院"),
            ("Maple & Pine Architects", "枫松建筑事务所"),
            ("Orbital Foods", "轨道食品"),
            ("Lumen Analytics", "流明数据"),
            ("Greyhound Media", "灰狗传媒"),
        ],
        "china": [
            ("Xinghe Technology", "星河科技"),
            ("Yunfan Logistics", "云帆物流"),
            ("Qiming Education", "启明教育"),
            ("Huaxin Bank", "华信银行"),
            ("Blue Whale Games", "蓝鲸游戏"),
            ("Donghu Hospital", "东湖医院"),
            ("Jinshi Consulting", "金石咨询"),
            ("Zhongyuan Pharma", "中原制药"),
        ],
    },
    "partner": {},  # values are people's names, drawn from NAMES
    "diet": {
        "any": [
            ("a vegetarian diet", "素食", "vegetarian"),
            ("a vegan diet", "纯素饮食", "vegan"),
            ("a pescatarian diet", "鱼素饮食"),
            ("a keto diet", "生酮饮食", "keto"),
            ("a gluten-free diet", "无麸质饮食", "gluten-free"),
            ("a low-carb diet", "低碳水饮食", "low-carb"),
            ("a Mediterranean diet", "地中海饮食"),
            ("intermittent fasting", "轻断食", "16:8轻断食"),
        ],
    },
    "phone": {
        "any": [
            ("iPhone 15", "iPhone 15"),
            ("Pixel 8", "Pixel 8"),
            ("Galaxy S23", "三星Galaxy S23", "Galaxy S23"),
            ("Xiaomi 14", "小米14"),
            ("Huawei Mate 60", "华为Mate 60", "Mate 60"),
            ("OnePlus 12", "一加12", "OnePlus 12"),
            ("iPhone 13 mini", "iPhone 13 mini"),
            ("Fairphone 5", "Fairphone 5"),
            ("OPPO Find X7", "OPPO Find X7"),
            ("vivo X100", "vivo X100"),
        ],
    },
    "team": {
        "west": [
            ("Arsenal", "阿森纳"),
            ("Liverpool", "利物浦"),
            ("FC Barcelona", "巴塞罗那"),
            ("Celtic", "凯尔特人"),
            ("Manchester City", "曼城"),
            ("Bayern Munich", "拜仁慕尼黑"),
            ("Benfica", "本菲卡"),
            ("Ajax", "阿贾克斯"),
            ("Borussia Dortmund", "多特蒙德"),
        ],
        "china": [
            ("Beijing Guoan", "北京国安"),
            ("Shanghai Shenhua", "上海申花"),
            ("Shandong Taishan", "山东泰山"),
            ("Chengdu Rongcheng", "成都蓉城"),
            ("Wuhan Three Towns", "武汉三镇"),
            ("Real Madrid", "皇马"),
            ("Zhejiang FC", "浙江队"),
        ],
    },
    "car": {
        "any": [
            ("Toyota Corolla", "丰田卡罗拉"),
            ("Mazda CX-5", "马自达CX-5"),
            ("Volkswagen Golf", "大众高尔夫"),
            ("Tesla Model 3", "特斯拉Model 3", "Tesla Model 3"),
            ("BYD Atto 3", "比亚迪元PLUS"),
            ("Honda Civic", "本田思域", "Civic"),
            ("Subaru Outback", "斯巴鲁傲虎"),
            ("Kia Niro", "起亚Niro"),
            ("NIO ES6", "蔚来ES6"),
            ("Li Auto L7", "理想L7"),
            ("Ford Fiesta", "福特嘉年华"),
        ],
    },
    "sport": {
        "any": [
            ("running", "跑步"),
            ("swimming", "游泳"),
            ("bouldering", "攀岩"),
            ("cycling", "骑行"),
            ("yoga", "瑜伽", "yoga"),
            ("badminton", "羽毛球"),
            ("boxing", "拳击"),
            ("tennis", "网球"),
            ("pilates", "普拉提", "pilates"),
            ("rowing", "划艇"),
        ],
    },
    "instrument": {
        "any": [
            ("piano", "钢琴"),
            ("guitar", "吉他"),
            ("cello", "大提琴"),
            ("violin", "小提琴"),
            ("drums", "架子鼓"),
            ("ukulele", "尤克里里"),
            ("saxophone", "萨克斯"),
            ("erhu", "二胡"),
            ("trumpet", "小号"),
        ],
    },
    "language": {
        "any": [
            ("Spanish", "西班牙语"),
            ("Japanese", "日语"),
            ("German", "德语"),
            ("Korean", "韩语"),
            ("Italian", "意大利语"),
            ("French", "法语"),
            ("Arabic", "阿拉伯语"),
            ("Dutch", "荷兰语"),
            ("Russian", "俄语"),
        ],
    },
    "coffee": {
        "any": [
            ("an oat flat white", "燕麦拿铁", "oat latte"),
            ("a double espresso", "双份浓缩", "double espresso"),
            ("an iced americano", "冰美式"),
            ("a chai latte", "印度香料奶茶", "chai latte"),
            ("green tea", "绿茶"),
            ("a cortado", "可塔朵", "cortado"),
            ("bubble tea", "珍珠奶茶"),
            ("a matcha latte", "抹茶拿铁"),
            ("a hot chocolate", "热巧克力"),
        ],
    },
}

#: Facts that stay put (category 4 only). ``group`` keeps two items from saying contradictory
#: things (a pet of one kind here and a different pet in a multi-hop pair).
STATIC = {
    "allergy": {
        "any": [
            ("peanuts", "花生"),
            ("shellfish", "虾蟹"),
            ("sesame", "芝麻"),
            ("tree nuts", "坚果"),
            ("eggs", "鸡蛋"),
            ("kiwi", "猕猴桃"),
            ("mango", "芒果"),
            ("soy", "大豆"),
        ]
    },
    "hometown": {
        "west": [
            ("Cork", "科克"),
            ("Aberdeen", "阿伯丁"),
            ("Tucson", "图森"),
            ("Adelaide", "阿德莱德"),
            ("Leeds", "利兹"),
            ("Halifax", "哈利法克斯"),
            ("Gdańsk", "格但斯克"),
            ("Bergen", "卑尔根"),
            ("Galway", "戈尔韦"),
        ],
        "china": [
            ("Harbin", "哈尔滨"),
            ("Guilin", "桂林"),
            ("Luoyang", "洛阳"),
            ("Shaoxing", "绍兴"),
            ("Chaozhou", "潮州"),
            ("Zunyi", "遵义"),
            ("Yantai", "烟台"),
            ("Lanzhou", "兰州"),
        ],
    },
    "condition": {
        "any": [
            ("asthma", "哮喘"),
            ("migraines", "偏头痛"),
            ("type 1 diabetes", "1型糖尿病"),
            ("a slipped disc", "腰椎间盘突出"),
            ("eczema", "湿疹"),
            ("high blood pressure", "高血压"),
            ("IBS", "肠易激综合征", "IBS"),
        ]
    },
    "degree": {
        "any": [
            ("marine biology", "海洋生物学"),
            ("history", "历史学"),
            ("mechanical engineering", "机械工程"),
            ("economics", "经济学"),
            ("philosophy", "哲学"),
            ("fine art", "美术"),
            ("linguistics", "语言学"),
            ("statistics", "统计学"),
        ]
    },
    "birthday": {
        "any": [
            ("14 March", "3月14日"),
            ("2 July", "7月2日"),
            ("29 October", "10月29日"),
            ("5 January", "1月5日"),
            ("21 August", "8月21日"),
            ("11 December", "12月11日"),
            ("30 May", "5月30日"),
            ("17 September", "9月17日"),
        ]
    },
    "cuisine": {
        "any": [
            ("Thai", "泰国菜"),
            ("Ethiopian", "埃塞俄比亚菜"),
            ("Sichuan", "川菜"),
            ("Korean", "韩国菜"),
            ("Lebanese", "黎巴嫩菜"),
            ("Mexican", "墨西哥菜"),
            ("Cantonese", "粤菜"),
            ("Yunnan", "云南菜"),
            ("Vietnamese", "越南菜"),
            ("Georgian", "格鲁吉亚菜"),
        ]
    },
    "fear": {
        "any": [
            ("heights", "高处"),
            ("deep water", "深水"),
            ("spiders", "蜘蛛"),
            ("flying", "坐飞机"),
            ("needles", "打针"),
            ("thunderstorms", "打雷"),
            ("lifts", "电梯"),
        ]
    },
    "author": {
        "any": [
            ("Terry Pratchett", "特里·普拉切特"),
            ("Ursula K. Le Guin", "厄休拉·勒古恩"),
            ("Haruki Murakami", "村上春树"),
            ("Agatha Christie", "阿加莎·克里斯蒂"),
            ("Liu Cixin", "刘慈欣"),
            ("Yu Hua", "余华"),
            ("Jin Yong", "金庸"),
            ("Toni Morrison", "托妮·莫里森"),
            ("Kazuo Ishiguro", "石黑一雄"),
            ("Eileen Chang", "张爱玲"),
        ]
    },
    "heritage": {
        "west": [
            ("Polish", "波兰语"),
            ("Tagalog", "他加禄语"),
            ("Welsh", "威尔士语"),
            ("Greek", "希腊语"),
            ("Hindi", "印地语"),
            ("Portuguese", "葡萄牙语"),
            ("Cantonese", "粤语"),
        ],
        "china": [
            ("Cantonese", "粤语"),
            ("Hakka", "客家话"),
            ("Hokkien", "闽南话"),
            ("Teochew", "潮汕话"),
            ("Sichuanese", "四川话"),
            ("Shanghainese", "上海话"),
        ],
    },
    "hobby": {
        "any": [
            ("pottery", "陶艺"),
            ("birdwatching", "观鸟"),
            ("woodworking", "木工"),
            ("knitting", "织毛衣"),
            ("film photography", "胶片摄影"),
            ("calligraphy", "书法"),
            ("gardening", "园艺"),
            ("sourdough baking", "烤酸种面包"),
            ("model railways", "火车模型"),
        ]
    },
    "film": {
        "any": [
            ("Spirited Away", "千与千寻"),
            ("The Grand Budapest Hotel", "布达佩斯大饭店"),
            ("Amélie", "天使爱美丽"),
            ("In the Mood for Love", "花样年华"),
            ("Arrival", "降临"),
            ("Paddington 2", "帕丁顿熊2"),
            ("Farewell My Concubine", "霸王别姬"),
            ("The Wandering Earth", "流浪地球"),
            ("Before Sunrise", "爱在黎明破晓前"),
            ("Let the Bullets Fly", "让子弹飞"),
        ]
    },
    "dream": {
        "any": [
            ("Patagonia", "巴塔哥尼亚"),
            ("Iceland", "冰岛"),
            ("Kyoto", "京都"),
            ("New Zealand", "新西兰"),
            ("Morocco", "摩洛哥"),
            ("the Faroe Islands", "法罗群岛"),
            ("Tibet", "西藏"),
            ("Namibia", "纳米比亚"),
            ("the Galápagos", "加拉帕戈斯群岛"),
        ]
    },
    "wake": {
        "any": [
            ("5:30", "五点半"),
            ("6 o'clock", "六点"),
            ("4:45", "四点四十五"),
            ("7:15", "七点一刻"),
            ("5 o'clock", "五点"),
            ("6:20", "六点二十"),
        ]
    },
    "volunteer": {
        "any": [
            ("at an animal shelter", "在流浪动物救助站帮忙"),
            ("at a food bank", "在食物银行分拣捐赠物资"),
            ("coaching a kids' football team", "给小朋友当足球教练"),
            ("reading to residents of a care home", "去养老院给老人读书"),
            ("at a charity shop", "在慈善二手店站柜台"),
            ("teaching adults to read", "教成年人识字"),
            ("picking litter on the beach", "去海边捡垃圾"),
        ]
    },
    "boardgame": {
        "any": [
            ("Catan", "卡坦岛"),
            ("Ticket to Ride", "车票之旅"),
            ("Wingspan", "展翅翱翔"),
            ("mahjong", "麻将"),
            ("chess", "国际象棋"),
            ("Go", "围棋"),
            ("Codenames", "行动代号"),
            ("Carcassonne", "卡卡颂"),
        ]
    },
    "musician": {
        "any": [
            ("Radiohead", "电台司令"),
            ("Fleetwood Mac", "佛利伍麦克"),
            ("Adele", "阿黛尔"),
            ("Jay Chou", "周杰伦"),
            ("Mayday", "五月天"),
            ("Eason Chan", "陈奕迅"),
            ("Björk", "比约克"),
            ("Faye Wong", "王菲"),
            ("Joni Mitchell", "琼尼·米切尔"),
        ]
    },
    "pet": {
        "group": "pet",
        "any": [
            ("a beagle", "一只比格犬"),
            ("a ginger cat", "一只橘猫"),
            ("two guinea pigs", "两只豚鼠"),
            ("a border collie", "一只边牧"),
            ("a retired greyhound", "一只退役的灵缇"),
            ("a tortoise", "一只乌龟"),
            ("a budgie", "一只虎皮鹦鹉"),
        ],
    },
}

#: Details of dated events (category 2). Events without a list take no value.
EVENT_VALUES = {
    "race": [
        ("half marathon", "半程马拉松"),
        ("10K", "十公里跑"),
        ("trail race", "越野跑"),
        ("charity fun run", "公益跑"),
    ],
    "concert": [
        ("Arctic Monkeys", "北极猴子"),
        ("Hozier", "霍齐尔"),
        ("Florence + the Machine", "弗洛伦斯与机器"),
        ("Tame Impala", "Tame Impala"),
        ("Mayday", "五月天"),
        ("Jay Chou", "周杰伦"),
        ("Eason Chan", "陈奕迅"),
        ("Faye Wong", "王菲"),
    ],
    "wedding": [
        ("my cousin's", "表姐的"),
        ("my best friend's", "最好的朋友的"),
        ("a colleague's", "一个同事的"),
        ("my old flatmate's", "以前室友的"),
    ],
    "interview": [
        ("Brightwater Insurance", "明水保险"),
        ("Kestrel Games", "红隼游戏"),
        ("Northwind Bank", "北风银行"),
        ("Lumen Analytics", "流明数据"),
        ("Qiming Education", "启明教育"),
        ("Blue Whale Games", "蓝鲸游戏"),
    ],
    # the trip goes to a city from the user's city pool (see generate.py)
}
EVENTS = (
    "race",
    "concert",
    "wedding",
    "interview",
    "dental",
    "trip",
    "diving",
    "ankle",
    "dinner",
    "parents",
    "flu",
    "talk",
    "sofa",
    "camping",
)

#: Multi-hop pairs (category 1): the first turn links a role to a name, the second says
#: something about the name only.
MULTIHOP = ("child", "pet", "trip_friend", "doctor", "manager")
MULTIHOP_GROUPS = {"pet": "pet"}
MULTIHOP_VALUES = {
    "child": [
        ("basketball", "篮球"),
        ("swimming", "游泳"),
        ("football", "足球"),
        ("gymnastics", "体操"),
        ("chess", "国际象棋"),
        ("table tennis", "乒乓球"),
        ("fencing", "击剑"),
    ],
    "pet": [
        ("a torn knee ligament", "膝盖韧带撕裂"),
        ("a thyroid problem", "甲状腺问题"),
        ("bad tartar on its teeth", "严重的牙结石"),
        ("a skin infection", "皮肤感染"),
        ("early arthritis", "早期关节炎"),
    ],
    "doctor": [
        ("cut back on salt", "少吃盐"),
        ("walk 8,000 steps a day", "每天走八千步"),
        ("stop drinking coffee after noon", "中午以后别喝咖啡"),
        ("do physio exercises twice a week", "每周做两次理疗"),
        ("be in bed before eleven", "十一点前上床睡觉"),
        ("cut down on sugar", "少吃甜食"),
    ],
    "manager": [
        ("be in the office on Tuesdays and Thursdays", "每周二和周四到公司坐班"),
        ("write a status note every Friday", "每周五交一份周报"),
        ("log every request in the new ticketing tool", "把所有需求都记到新的工单系统里"),
        ("keep meetings under 25 minutes", "会议控制在25分钟以内"),
        ("share their calendars with the whole team", "把日程共享给整个团队"),
    ],
}
CHILD_ROLES = {"son": ("son", "儿子"), "daughter": ("daughter", "女儿")}
PET_SPECIES = [("dog", "狗"), ("cat", "猫"), ("rabbit", "兔子")]
PET_NAMES = ["Biscuit", "Waffles", "Mochi", "Pepper", "Juniper", "Toffee", "Olive", "Bao"]
PET_NAMES_ZH = ["豆豆", "团子", "可乐", "年糕", "旺财", "咪咪", "布丁", "花卷"]

#: Months for "I'm travelling to X in <month>" (index = month number - 1).
MONTHS = [
    ("January", "1月"),
    ("February", "2月"),
    ("March", "3月"),
    ("April", "4月"),
    ("May", "5月"),
    ("June", "6月"),
    ("July", "7月"),
    ("August", "8月"),
    ("September", "9月"),
    ("October", "10月"),
    ("November", "11月"),
    ("December", "12月"),
]

#: Other people for category 7, as (english, chinese, gender). Gender only picks a fitting name.
RELATIONS = [
    ("sister", "姐姐", "f"),
    ("brother", "哥哥", "m"),
    ("cousin", "表妹", "f"),
    ("colleague", "同事", None),
    ("friend", "朋友", None),
    ("neighbour", "邻居", None),
    ("flatmate", "室友", None),
    ("best friend", "闺蜜", "f"),
    ("team lead", "组长", None),
]

NAMES = {
    "west": {
        "f": [
            "Anna",
            "Clara",
            "Grace",
            "Leah",
            "Nora",
            "Ruth",
            "Jess",
            "Imogen",
            "Tara",
            "Zoe",
            "Ellie",
            "Megan",
            "Ines",
            "Freya",
        ],
        "m": [
            "Tom",
            "Ben",
            "Sam",
            "Luke",
            "Owen",
            "Raj",
            "Felix",
            "Hugo",
            "Jack",
            "Noah",
            "Callum",
            "Dev",
            "Mateo",
            "Arlo",
        ],
    },
    "china": {
        "f": ["陈静", "小雨", "林悦", "周婷", "佳佳", "王蕾", "苏晴", "许倩", "小鹿", "梁爽"],
        "m": ["王磊", "刘洋", "阿杰", "张伟", "赵鹏", "李想", "孙浩", "何明", "老周", "马骁"],
    },
    # Chinese office life with English names, for the mixed-language users
    "office": {
        "f": ["Vivian", "Cindy", "Amy", "Grace", "Sophie", "Tina", "小雨", "林悦"],
        "m": ["Kevin", "Jason", "Eric", "Tony", "Leo", "Frank", "阿杰", "王磊"],
    },
}
DOCTOR_NAMES = {
    "west": ["Okafor", "Lindqvist", "Patel", "Moreau", "Brennan", "Nakamura", "Hughes"],
    "china": ["李", "黄", "吴", "郑", "高", "冯", "宋"],
}
