package chaostest

import (
	"os/exec"
	"strings"
	"testing"
)

// A test that imports chaostest compiles no database driver: the clients
// of the dependencies a run starts itself (PostgreSQL, Redis) are linked
// only by a blank import of runner/depclients/pgredis, and the demo (with
// its SQLite) is never imported. The packages a build of chaostest
// compiles are what go list -deps prints.
func TestImportBringsNoDatabaseDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"modernc.org/sqlite", "github.com/jackc/pgx", "github.com/redis/go-redis", "github.com/chaoskit/chaoskit/demo"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("chaostest depends on %s", pkg)
			}
		}
	}
}
