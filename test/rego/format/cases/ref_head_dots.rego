package cases.refheads2

limits["cpu"] := 2

quota.mem.max := 4
