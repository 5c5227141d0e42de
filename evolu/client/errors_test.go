package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// TestRelayErrorTranslation: each of the relay's error answers, and a
// version mismatch, comes out of the package as one *RelayError with its
// code, still unwrapping to the protocol error; other errors pass as they
// are.
func TestRelayErrorTranslation(t *testing.T) {
	owner := protocol.OwnerID{7}
	for in, want := range map[protocol.ErrorCode]RelayCode{
		protocol.WriteKeyError: RelayWriteKey,
		protocol.WriteError:    RelayWrite,
		protocol.QuotaError:    RelayQuota,
		protocol.SyncError:     RelaySync,
	} {
		pe := &protocol.ResponseError{OwnerID: owner, Code: in}
		err := relayError(fmt.Errorf("sync: %w", pe))
		var re *RelayError
		if !errors.As(err, &re) || re.Code != want || re.Owner != owner || !errors.Is(err, pe) {
			t.Errorf("%v: got %v, want code %v", in, err, want)
		}
	}
	var re *RelayError
	if err := relayError(&protocol.VersionError{OwnerID: owner, Version: 2}); !errors.As(err, &re) || re.Code != RelayVersion {
		t.Errorf("version mismatch: %v", err)
	}
	plain := errors.New("dial failed")
	if relayError(plain) != plain {
		t.Error("an error that is not the relay's was wrapped")
	}
}

func TestRelayCodeNames(t *testing.T) {
	seen := map[string]bool{}
	for c := RelayWriteKey; c <= RelayNoReply; c++ {
		if n := c.String(); seen[n] || len(n) == 0 || n[0] == 'R' {
			t.Errorf("code %d: name %q missing or repeated", c, n)
		} else {
			seen[n] = true
		}
	}
	b, _ := json.Marshal(map[string]RelayCode{"code": RelayQuota})
	if string(b) != `{"code":"quota"}` {
		t.Fatalf("JSON %s", b)
	}
}
