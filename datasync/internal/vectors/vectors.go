// Package vectors loads testdata/datasync/data-sync-v1.vectors.json, the
// frozen conformance surface of data-sync-v1, for the datasync tests.
package vectors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// File is the vectors file's shape.
type File struct {
	Version int    `json:"version"`
	Prefix  string `json:"prefix"`
	Frames  []struct {
		Name    string `json:"name"`
		Kind    string `json:"kind"`
		Wire    string `json:"wire"`
		BlobHex string `json:"blob_hex"`
	} `json:"frames"`
	ParseDefaults []struct {
		Name   string `json:"name"`
		Body   string `json:"body"`
		Expect struct {
			Reply   bool `json:"reply"`
			Partial bool `json:"partial"`
		} `json:"expect"`
	} `json:"parse_defaults"`
	AttachmentHashes []struct {
		InputUTF8 *string `json:"input_utf8"`
		InputHex  *string `json:"input_hex"`
		SHA256    string  `json:"sha256"`
		Size      int64   `json:"size"`
	} `json:"attachment_hashes"`
	AttachmentReferences []struct {
		Name string `json:"name"`
		JSON string `json:"json"`
	} `json:"attachment_references"`
	DataPurposes []struct {
		Name string `json:"name"`
		JSON string `json:"json"`
	} `json:"data_purposes"`
	BlobDigests []struct {
		InputHex string `json:"input_hex"`
		Digest   string `json:"digest"`
	} `json:"blob_digests"`
}

// Path is the vectors file's location in this module.
func Path() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "testdata", "datasync", "data-sync-v1.vectors.json")
}

// Load reads and decodes the vectors file, failing tb if it cannot.
func Load(tb testing.TB) File {
	tb.Helper()
	raw, err := os.ReadFile(Path())
	if err != nil {
		tb.Fatalf("read vectors: %v", err)
	}
	var f File
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatalf("decode vectors: %v", err)
	}
	if len(f.Frames) == 0 {
		tb.Fatal("vectors file has no frames")
	}
	return f
}
