package plan

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/chaoskit/chaoskit/internal/suggest"
)

// passwordRef matches the {password:NAME} placeholder: the password of
// dependency NAME, made for each run. A Postgres dependency requires it
// (SCRAM); a command dependency is handed it where its argv or env says
// (redis-server --requirepass "{password:cache}"); the target, the demo's
// args and readiness commands get it the same way.
var passwordRef = regexp.MustCompile(`\{password:([A-Za-z0-9_-]+)\}`)

// PasswordEnvPrefix starts the environment variables in which a target
// started by chaoskit finds the run's passwords: CHAOSKIT_PASSWORD_DB for
// dependency db. A process's environment, unlike its command line, is
// not readable by other users of the machine.
const PasswordEnvPrefix = "CHAOSKIT_PASSWORD_"

// PasswordEnv is the environment variable of dependency name's password.
func PasswordEnv(name string) string {
	return PasswordEnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// fillPasswords replaces every password placeholder in s with its
// password.
func fillPasswords(s string, passwords map[string]string) string {
	if !strings.Contains(s, "{password:") {
		return s
	}
	return passwordRef.ReplaceAllStringFunc(s, func(m string) string {
		if p, ok := passwords[passwordRef.FindStringSubmatch(m)[1]]; ok {
			return p
		}
		return m
	})
}

func fillAllWith(ss []string, f func(string) string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func fillEnvWith(env map[string]string, f func(string) string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = f(v)
	}
	return out
}

// WithPasswords returns a copy of the target with the password
// placeholders of its env filled; its command line has none (see
// checkPasswordRefs), and the demo reads its own from the environment.
func (t Target) WithPasswords(passwords map[string]string) Target {
	f := func(s string) string { return fillPasswords(s, passwords) }
	if t.Command != nil {
		c := *t.Command
		c.Env = fillEnvWith(c.Env, f)
		t.Command = &c
	}
	return t
}

// WithPasswords returns a copy of d with its password placeholders
// filled.
func (d Dependency) WithPasswords(passwords map[string]string) Dependency {
	f := func(s string) string { return fillPasswords(s, passwords) }
	d.Ready.Command = fillAllWith(d.Ready.Command, f)
	if d.Command != nil {
		c := *d.Command
		c.Argv, c.Env = fillAllWith(c.Argv, f), fillEnvWith(c.Env, f)
		d.Command = &c
	}
	return d
}

// checkPasswordRefs refuses a {password:NAME} that names no dependency.
func (v *validator) checkPasswordRefs() {
	deps := map[string]bool{}
	var names []string
	for _, d := range v.sc.Dependencies {
		deps[d.Name] = true
		names = append(names, d.Name)
	}
	check := func(at string, ss ...string) {
		for _, s := range ss {
			for _, m := range passwordRef.FindAllStringSubmatch(s, -1) {
				if !deps[m[1]] {
					hint := "a password is a dependency's: name one of the scenario's dependencies"
					if c, ok := suggest.Closest(m[1], names); ok {
						hint = fmt.Sprintf("did you mean {password:%s}?", c)
					}
					v.errorf(at, hint, "%s names no dependency", m[0])
				}
			}
		}
	}
	t := v.sc.Target
	visible := func(at string, ss ...string) {
		for _, s := range ss {
			if m := passwordRef.FindString(s); m != "" {
				v.errorf(at, "any user of this machine can read a command line (ps): put it in target.command.env, such as DATABASE_URL: \"postgres://postgres:"+m+"@127.0.0.1:{port:db}/postgres\"", "%s cannot be given on the target's command line", m)
			}
		}
	}
	visible("$.target.url", t.URL)
	if t.Command != nil {
		visible("$.target.command.argv", t.Command.Argv...)
		for k, val := range t.Command.Env {
			check("$.target.command.env."+k, val)
		}
	}
	if t.Demo != nil {
		check("$.target.demo.args", t.Demo.Args...)
	}
	for i, d := range v.sc.Dependencies {
		check(fmt.Sprintf("$.dependencies[%d].ready.command", i), d.Ready.Command...)
		if d.Command != nil {
			check(fmt.Sprintf("$.dependencies[%d].command.argv", i), d.Command.Argv...)
			for k, val := range d.Command.Env {
				check(fmt.Sprintf("$.dependencies[%d].command.env.", i)+k, val)
			}
		}
	}
}
