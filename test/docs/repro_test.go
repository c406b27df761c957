package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReproductionDoc is the page that collects the measured tables.
const ReproductionDoc = "docs/reproduction.md"

// copiedTables returns each table of page that follows a `<!-- from FILE -->` marker, keyed by
// its position, with the file it claims to copy.
func copiedTables(page string) (srcs, tables []string) {
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		src, ok := strings.CutPrefix(lines[i], "<!-- from ")
		if !ok {
			continue
		}
		src = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(src), "-->"))
		j := i + 1
		for j < len(lines) && strings.HasPrefix(lines[j], "|") {
			j++
		}
		srcs = append(srcs, src)
		tables = append(tables, strings.Join(lines[i+1:j], "\n"))
		i = j - 1
	}
	return srcs, tables
}

// TestReproductionTablesInSync checks that every table docs/reproduction.md copies still appears
// word for word in the page it names, so the collected numbers never drift from the detailed ones.
func TestReproductionTablesInSync(t *testing.T) {
	root := repoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, ReproductionDoc))
	if err != nil {
		t.Fatal(err)
	}
	srcs, tables := copiedTables(string(page))
	if len(tables) < 20 {
		t.Fatalf("%s: found %d copied tables, want ≥ 20 (markers lost?)", ReproductionDoc, len(tables))
	}
	for i, src := range srcs {
		table := tables[i]
		first, _, _ := strings.Cut(table, "\n")
		t.Run(src+"/"+first, func(t *testing.T) {
			if strings.Count(table, "\n") < 2 {
				t.Fatalf("marker for %s is not followed by a table", src)
			}
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(src)))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), table) {
				t.Errorf("the table under %q in %s is no longer in %s word for word; copy it again:\n%s", first, ReproductionDoc, src, table)
			}
		})
	}
}

func TestCopiedTables(t *testing.T) {
	page := "x\n<!-- from a.md -->\n| h |\n| --- |\n| 1 |\ntext\n<!-- from b.md -->\n| k |\n| --- |\n"
	srcs, tables := copiedTables(page)
	want := []string{"a.md", "b.md"}
	if strings.Join(srcs, ",") != strings.Join(want, ",") {
		t.Errorf("sources (-want +got):\n-%v\n+%v", want, srcs)
	}
	if len(tables) != 2 || tables[0] != "| h |\n| --- |\n| 1 |" || tables[1] != "| k |\n| --- |\n" && tables[1] != "| k |\n| --- |" {
		t.Errorf("tables = %q", tables)
	}
}
