package tandemcli

import (
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate fixes the date in generated pages, so docs/man/ changes only
// when the commands do.
var manDate = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func (a *app) manCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "man DIR",
		Short: "Write ferry's man pages (ferry.1, ferry-init.1, ...) into DIR, which must exist",
		Args:  args(1, 1, "man DIR"),
		RunE: func(c *cobra.Command, as []string) error {
			fi, err := os.Stat(as[0])
			if err != nil || !fi.IsDir() {
				return failf("invalid", "%s is not a directory: create it first", as[0])
			}
			dir, _ := filepath.Abs(as[0])
			hdr := &doc.GenManHeader{Title: "FERRY", Section: "1", Date: &manDate, Source: "Ferry", Manual: "Ferry manual"}
			root.DisableAutoGenTag = true
			long := root.Long
			root.Long += "\n\n" + exitCodesText // the EXIT STATUS of every page's parent
			defer func() { root.Long = long }()
			if err := doc.GenManTree(root, hdr, dir); err != nil {
				return failf("storage", "cannot write the man pages in %s: %v", dir, pathErr(err))
			}
			return nil
		},
	}
}
