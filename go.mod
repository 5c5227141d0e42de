module github.com/ferry-sync/ferry

go 1.26.8

require github.com/spf13/cobra v1.10.2

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/emersion/go-imap/v2 v2.0.0-beta.8 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
