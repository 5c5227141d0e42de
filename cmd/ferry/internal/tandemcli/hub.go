package tandemcli

import (
	"fmt"
	"io"

	"github.com/mdp/qrterminal/v3"
	"github.com/spf13/cobra"
)

func (a *app) hubCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "hub",
		GroupID: groupSetup,
		Short:   "The mail account this device syncs through",
		Args:    args(1, 1, "hub qr"),
		RunE: func(c *cobra.Command, as []string) error {
			return usagef("unknown hub command %q: use ferry hub qr", as[0])
		},
	}
	c.AddCommand(a.hubQRCmd())
	return c
}

func (a *app) hubQRCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "qr",
		Short: "Show the mail account's details as a QR code and as text, for another device (after a confirmation)",
		Long: `Show the mail account this device syncs through as a QR code and as text, so that
a new or restored device can connect the same account (ferry connect paste).
It holds the account's password or token: ferry asks first, unless --yes.`,
		Args: args(0, 0, "hub qr"),
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			h := s.dev.Hub()
			if h.IsZero() {
				return failf("no_hub", "this device is not connected to a mail account yet: run ferry connect")
			}
			if !a.confirm(c, "The code holds the password of "+h.String()+": anyone who sees it can read and change this mailbox. Show it?") {
				return failf("declined", "not shown (answer y to show it)")
			}
			b, err := h.MarshalJSON()
			if err != nil {
				return failf("internal", "cannot write the hub's details")
			}
			if a.json {
				return emit(c.OutOrStdout(), map[string]any{"hub": h.String(), "text": string(b)})
			}
			w := c.OutOrStdout()
			printQR(w, string(b))
			fmt.Fprintf(w, "\n%s\n\nOn the other device: ferry connect paste, then paste the line above.\n", b)
			return nil
		},
	}
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "do not ask")
	return a.flags(c, true)
}

// printQR draws text as a QR code with half-block characters.
func printQR(w io.Writer, text string) {
	qrterminal.GenerateWithConfig(text, qrterminal.Config{
		Level: qrterminal.L, Writer: w, HalfBlocks: true,
		BlackChar: qrterminal.BLACK_BLACK, WhiteBlackChar: qrterminal.WHITE_BLACK,
		WhiteChar: qrterminal.WHITE_WHITE, BlackWhiteChar: qrterminal.BLACK_WHITE,
		QuietZone: 2,
	})
}
