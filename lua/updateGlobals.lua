--[[
updateGlobals: the indexes that span users after one user op (src/engine/user-op.ts), in one call
on the {global} slot, when the user's script could not update them itself (on Cluster, or when the
streak's expiry was not among those it was given). Nothing repairs them after a crash between the
user script and this one: npm run verify-state reports it and npm run rebuild recomputes them.

KEYS and ARGV: those of updateGlobals(K, A) in lib/globals.lua.

Reply: 1.
]]

--!include lib/globals.lua

updateGlobals(KEYS, ARGV)
return 1
