package cases.strings

esc := "\u0041\t\"q\""

raw := `C:\dir\n`

key := input["user-name"]

plain := input["user"]
