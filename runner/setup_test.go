package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/runner/depclients"

	"github.com/chaoskit/chaoskit/plan"
)

func TestStatementStart(t *testing.T) {
	script := "-- schema\nCREATE TABLE a (s text DEFAULT ';');\n/* two; */ CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;\n\n  INSERT INTO a VALUES ('x;y');"
	for n, want := range []int{10, 58, 134, -1} {
		if got := statementStart(script, n); got != want {
			t.Errorf("statementStart(%d) = %d (%q), want %d", n, got, script[max(got, 0):], want)
		}
	}
}

func TestSQLErrorNamesTheLineAndColumn(t *testing.T) {
	script := "CREATE TABLE a (id int);\nINSERT INTO a\n  VALUES (1);\nINSERT INTO b VALUES (2);\n"
	file := plan.SQLScript{File: "migrations/001.sql", Text: script, Line: 1, Column: 1}
	tests := []struct {
		name string
		sc   plan.SQLScript
		done int
		err  error
		want string
	}{
		{"a syntax error, at its position", file, 0, &depclients.SQLError{Severity: "ERROR", Message: `syntax error at or near "VALUES"`, Position: 42},
			`migrations/001.sql:3:3: ERROR: syntax error at or near "VALUES"`},
		{"an error without a position, at its statement", file, 2, &depclients.SQLError{Severity: "ERROR", Message: `relation "b" does not exist`},
			`migrations/001.sql:4:1: ERROR: relation "b" does not exist`},
		{"SQL written in the scenario", plan.SQLScript{File: "s.yaml", Text: script, Inline: true}, 1, &depclients.SQLError{Severity: "ERROR", Message: "no"},
			"ERROR: no (line 2, column 1 of the sql)"},
		{"not a server error", file, 0, errors.New("conn closed"), "conn closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sqlError(tt.sc, tt.sc.Text, tt.done, tt.err).Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A program that did not import the clients of the managed dependencies
// (runner's own tests do not) is told which import it lacks.
func TestManagedDependenciesNeedTheirClientsImported(t *testing.T) {
	_, err := managedClients()
	var ie *InfraError
	if !errors.As(err, &ie) || !strings.Contains(ie.Fix, `import _ "github.com/chaoskit/chaoskit/runner/depclients/pgredis"`) {
		t.Fatalf("managedClients() = %v, want an infrastructure error naming the import", err)
	}
}
