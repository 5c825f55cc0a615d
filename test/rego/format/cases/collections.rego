package cases.collections

nums := [1, 2,
    3]

roles := {
  "admin": ["read", "write"], "guest": ["read"],
  "ops": [
     "deploy"],
}

flat := {"a": 1,
"b": 2}

path := concat("/",
    ["srv", "app"])

same := concat("/", [
    "srv",
    "app",
])

ids := {"x", "y"}
