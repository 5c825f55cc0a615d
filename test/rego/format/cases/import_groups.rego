package cases.imports

import input.request as req # the request
import data.lib.b
import data.lib.a

import data.z
import data.c

allow if req.ok
