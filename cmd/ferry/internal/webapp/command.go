package webapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
)

// Config is what the command takes from its surroundings.
type Config struct {
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Command is "ferry app".
func Command(cfg Config) *cobra.Command {
	var profile, addr string
	var noOpen bool
	c := &cobra.Command{
		Use:   "app",
		Short: "Use the lists in a browser window (on this computer only)",
		Long: `Serve the profile's lists as a web app on this computer and open it in the
browser: lists and items, conflicts side by side, sharing with QR codes and
links, adding a device, and first-run setup. Changes from other devices
appear as they arrive. The page is only for this computer (127.0.0.1) and
only for the browser that opened the printed link. Other ferry commands on
the profile keep working while it runs. Ctrl-C stops it.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dir, err := tandemcli.ProfileDir(profile, cfg.Getenv)
			if err != nil {
				return err
			}
			return serve(c.Context(), c.OutOrStdout(), dir, addr, !noOpen)
		},
	}
	c.Flags().StringVar(&profile, "profile", "", "the profile directory: one device (default $FERRY_HOME, else $XDG_DATA_HOME/ferry)")
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "where to listen: host:port (port 0: a free one); keep it on 127.0.0.1")
	c.Flags().BoolVar(&noOpen, "no-open", false, "print the link but do not open a browser")
	return c
}

// shutdownWait bounds how long stopping waits for requests in progress.
const shutdownWait = 5 * time.Second

func serve(ctx context.Context, out io.Writer, dir, addr string, open bool) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ferry app can't listen on %s (%w): choose another --addr", addr, err)
	}
	defer ln.Close()
	log, closeLog := appLog(dir)
	defer closeLog()
	l := newLive(dir, log)
	s, err := newServer(l, log, ln.Addr().String())
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); l.loop(ctx) }()
	defer func() {
		stop()
		s.stopPairing()
		wg.Wait()
	}()
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	link := s.url(ln.Addr().String())
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(out, "Warning: listening on %s, not only on this computer; the link below is the only way in.\n", host)
	}
	fmt.Fprintf(out, "Ferry app for %s: open\n%s\nCtrl-C stops it.\n", dir, link)
	if open {
		openBrowser(link)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownWait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	fmt.Fprintln(out, "Stopped.")
	return nil
}

// appLog is the app's own log, beside the profile (the device logs into
// the profile's ferry.log); a profile not made yet logs nowhere.
func appLog(dir string) (*slog.Logger, func()) {
	f, err := os.OpenFile(filepath.Join(dir, "app.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return slog.New(slog.DiscardHandler), func() {}
	}
	return slog.New(slog.NewTextHandler(f, nil)), func() { f.Close() }
}

// openBrowser asks the desktop to open link; when it can't, the printed
// link is there to open by hand.
func openBrowser(link string) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", link)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", link)
	default:
		cmd = exec.Command("xdg-open", link)
	}
	if cmd.Start() == nil {
		go cmd.Wait()
	}
}

// stopPairing ends a pairing still going on when the app stops (either
// side), and waits for it to clean up.
func (s *server) stopPairing() {
	s.mu.Lock()
	o, pr := s.offer, s.pair
	s.mu.Unlock()
	if o != nil {
		o.stop()
	}
	if pr != nil {
		pr.stop()
	}
	s.bg.Wait()
}
