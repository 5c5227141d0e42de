// Command ferry is the one binary of Ferry: local-first, end-to-end-encrypted
// sync. Each protocol has its subcommands (see "ferry help").
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		stop()
		os.Exit(tandemcli.Report(os.Stderr, err, os.Args[1:])) // "ferry: <one line>", exit 1 or 2 (usage)
	}
}
