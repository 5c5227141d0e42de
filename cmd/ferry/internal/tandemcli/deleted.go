package tandemcli

import (
	"path/filepath"
	"slices"
)

// A deleted item keeps no fields on the device, so show --all would list
// it without a title. The profile remembers the titles of the last
// maxDeleted items it saw deleted (by ferry rm, or arriving at a sync) in
// DIR/deleted.json.
const (
	deletedFile = "deleted.json"
	maxDeleted  = 1000
)

type deletedTitle struct {
	Item  string `json:"item"`
	Title string `json:"title"`
}

// rememberDeleted records the titles of items just deleted.
func rememberDeleted(dir string, gone ...deletedTitle) {
	if len(gone) == 0 {
		return
	}
	var known []deletedTitle
	readJSON(filepath.Join(dir, deletedFile), &known)
	known = append(known, gone...)
	if len(known) > maxDeleted {
		known = slices.Clone(known[len(known)-maxDeleted:])
	}
	writeJSON(filepath.Join(dir, deletedFile), known) // a lost title only shows less
}

// deletedTitles fills in the titles of deleted items the profile saw go.
func deletedTitles(dir string, its []itemOut) {
	var known []deletedTitle
	readJSON(filepath.Join(dir, deletedFile), &known)
	for i, it := range its {
		if !it.Deleted || it.Title != "" {
			continue
		}
		for _, k := range known {
			if k.Item == it.ID {
				its[i].Title = k.Title
			}
		}
	}
}

// rememberChanges records the titles of the items a sync deleted.
func rememberChanges(dir string, chs []change) {
	var gone []deletedTitle
	for _, ch := range chs {
		if ch.What == "deleted" {
			gone = append(gone, deletedTitle{Item: ch.ItemID, Title: ch.Item})
		}
	}
	rememberDeleted(dir, gone...)
}
