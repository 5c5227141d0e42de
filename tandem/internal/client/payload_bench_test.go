package client

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecodePayload reads one record payload of five writes strictly
// (§10.5), next to the anchor: encoding/json's lax reading of the same
// bytes into a generic value.
func BenchmarkDecodePayload(b *testing.B) {
	scope, rec, ws := sampleWrites(b)
	pt, err := EncodeRecordPayload(&RecordPayload{Record: rec, Writes: signedWrites(ws...)})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("tjson", func(b *testing.B) {
		b.SetBytes(int64(len(pt)))
		for b.Loop() {
			if _, err := DecodePayload(pt, scope); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("anchor-encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(pt)))
		for b.Loop() {
			var v any
			if err := json.Unmarshal(pt, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
