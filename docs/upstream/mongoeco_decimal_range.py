"""mongoeco: once a collection holds a Decimal128 at a field, a numeric range on that field
also returns documents whose value there is a string (standard mongoeco only).

Run: python docs/upstream/mongoeco_decimal_range.py
"""

import tempfile

from bson import Decimal128
from mongoeco import MongoClient
from mongoeco.engines import SQLiteEngine

with tempfile.TemporaryDirectory() as directory:
    client = MongoClient(engine=SQLiteEngine(f"{directory}/decimal.sqlite3"))
    docs = client["db"]["docs"]
    docs.create_index([("s", 1)], name="s")
    docs.insert_many([{"_id": "text", "s": "alpha"}, {"_id": "none"}])
    print("without a decimal:", sorted(d["_id"] for d in docs.find({"s": {"$gte": 1}})))
    docs.insert_one({"_id": "decimal", "s": Decimal128("1.5")})
    print("with a decimal:   ", sorted(d["_id"] for d in docs.find({"s": {"$gte": 1}})))
    client.close()
