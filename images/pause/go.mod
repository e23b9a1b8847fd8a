module leviath.local/pause

go 1.22
