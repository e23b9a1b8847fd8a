module leviath.dev/e2e/lingering-thread

go 1.22
