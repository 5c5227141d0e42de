package interop

import (
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/client"
)

// TestMnemonicMatchesEvolu: Ferry's mnemonic of owner secrets is
// @evolu/common 8.11.0's ownerSecretToMnemonic, and the secret Ferry parses
// from it is the one mnemonicToOwnerSecret gives.
func TestMnemonicMatchesEvolu(t *testing.T) {
	e := needReal(t)
	secrets := make([]client.Secret, 8)
	var hexes []string
	for i := range secrets {
		rand.Read(secrets[i][:])
		hexes = append(hexes, hex.EncodeToString(secrets[i][:]))
	}
	secrets[0] = client.Secret{}
	hexes[0] = hex.EncodeToString(secrets[0][:])
	script := `import { ownerSecretToMnemonic } from '@evolu/common';
for (const h of process.argv.slice(1)) console.log(ownerSecretToMnemonic(new Uint8Array(Buffer.from(h, 'hex'))));`
	ctx := withTimeout(t, time.Minute)
	cmd := exec.CommandContext(ctx, e.Node, append([]string{"--input-type=module", "-e", script}, hexes...)...)
	cmd.Dir = e.ClientDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(secrets) {
		t.Fatalf("node printed %d lines for %d secrets:\n%s", len(lines), len(secrets), out)
	}
	for i, s := range secrets {
		if got := s.Mnemonic(); got != lines[i] {
			t.Fatalf("secret %s: Ferry %q, Evolu %q", hexes[i], got, lines[i])
		}
		back, err := client.ParseSecret(lines[i])
		if err != nil || back != s {
			t.Fatalf("ParseSecret(Evolu's mnemonic of %s) = %x, %v", hexes[i], back, err)
		}
	}
}
