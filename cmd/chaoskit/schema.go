package main

import (
	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/plan"
)

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the scenario format, for editors (docs/schema.md)",
		Long: `schema prints a JSON Schema (draft 2020-12) of the scenario YAML, made from
the loader's own types: which keys exist where and the shape of each value.
Save it beside your scenarios and name it in their first line,

  # yaml-language-server: $schema=scenario.schema.json

and an editor with the YAML language server completes keys and marks
misspelt ones. chaoskit validate checks everything the schema cannot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			text, err := plan.JSONSchema()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(append(text, '\n'))
			return err
		},
	}
}
