package demo

import (
	"os"
	"regexp"
	"strings"
)

// PasswordEnvPrefix starts the environment variables in which chaoskit
// hands a target the passwords of the run's dependencies:
// CHAOSKIT_PASSWORD_DB for a dependency named db. The environment, unlike
// the command line, is not readable by other users of the machine. The
// same name as chaoskit's plan.PasswordEnvPrefix; the demo imports no
// part of the engine.
const PasswordEnvPrefix = "CHAOSKIT_PASSWORD_"

var passwordRef = regexp.MustCompile(`\{password:([A-Za-z0-9_-]+)\}`)

// PasswordEnv is the name of the environment variable holding the
// password of dependency name.
func PasswordEnv(name string) string {
	return PasswordEnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// FillPasswords replaces {password:NAME} in s with $CHAOSKIT_PASSWORD_NAME:
// the demo's flags name a password, and chaoskit puts it in the
// environment.
func FillPasswords(s string) string {
	return passwordRef.ReplaceAllStringFunc(s, func(m string) string {
		return os.Getenv(PasswordEnv(passwordRef.FindStringSubmatch(m)[1]))
	})
}
