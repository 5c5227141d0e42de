package webapp_test

import (
	"strings"
	"testing"
)

// TestBrowserListActions: what one person does to lists and items in the
// pages, checked against what ferry show then reads from the profile.
func TestBrowserListActions(t *testing.T) {
	p, pg, id := oneList(t, browser(t))

	pg.fill("new-item", "Milk")
	pg.fill("new-tags", "dairy, weekly")
	pg.click("", "Add")
	pg.waitText("Added Milk.", actionWait)
	pg.goTo(eval[string](pg, `document.querySelector(".items .title").getAttribute("href")`))
	pg.fill("nf-name", "qty")
	pg.fill("nf-value", "2")
	pg.click("", "Add field")
	pg.waitText("Saved qty.", actionWait)
	pg.fill("f-qty", "3")
	pg.click(`//form[.//input[@id="f-qty"]]`, "Save")
	pg.waitText("Saved qty.", actionWait)
	pg.do()
	pg.click(`//li[.//bdi[text()="weekly"]]`, "×")
	pg.waitText("Removed the tag weekly.", actionWait)
	pg.fill("add-tag", "cold")
	pg.click("", "Tag")
	pg.waitText("Tagged.", actionWait)
	pg.click("", "Mark done")
	pg.waitText("Done: Milk.", actionWait)
	show := p.ferry("show", id, "Milk", "--json")
	for _, want := range []string{`"qty"`, `"3"`, `"cold"`, `"dairy"`, `"done":true`} {
		if !strings.Contains(show, want) {
			t.Errorf("after the edits ferry show has no %s: %s", want, show)
		}
	}
	if strings.Contains(show, `"weekly"`) {
		t.Errorf("the removed tag is still there: %s", show)
	}
	pg.click("", "Delete this item")
	pg.waitText("Deleted Milk.", actionWait)
	if strings.Contains(p.ferry("show", id), "Milk") {
		t.Error("the deleted item is still listed")
	}

	pg.fill("rename", "Food")
	pg.click("", "Rename")
	pg.waitText("Renamed to Food.", actionWait)
	pg.fill("copy-name", "Food 2")
	pg.click("", "Copy")
	pg.waitText("Copied to the new list Food 2.", actionWait)
	names := map[string]bool{}
	for _, l := range p.lists() {
		names[l.Name] = true
	}
	if !names["Food"] || !names["Food 2"] || len(names) != 2 {
		t.Errorf("after rename and copy the lists are %v", names)
	}

	// An empty title, and a new list named like one the user has: refused
	// with one line, nothing changed.
	pg.goTo("/")
	pg.do()
	pg.fill("new-list", "food")
	pg.click("", "Make it")
	pg.waitText("You already have a list called", actionWait)
	if n := len(p.lists()); n != 2 {
		t.Errorf("a refused new list changed the lists: %d", n)
	}
}
