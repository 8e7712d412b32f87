package main

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

func chiRoutes() http.Handler {
	r := chi.NewRouter()
	r.Route("/chi/articles", func(r chi.Router) {
		r.Get("/", nil)
		r.Route("/{articleID}", func(r chi.Router) {
			r.Get("/", nil)
			r.Put("/", nil)
			r.Get("/comments/{n:[0-9]+}", nil)
		})
	})
	r.Mount("/chi/admin", admin())
	r.Group(func(r chi.Router) { r.Post("/chi/login", nil) })
	r.Method("PATCH", "/chi/settings", nil)
	return r
}

func admin() http.Handler {
	r := chi.NewRouter()
	r.Get("/users", nil)
	return r
}
