module leviath.local/go-floor

go 1.26.1
