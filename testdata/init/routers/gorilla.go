package main

import (
	"net/http"

	"github.com/gorilla/mux"
)

func gorillaRoutes() http.Handler {
	r := mux.NewRouter()
	r.HandleFunc("/mux/products/{key}", func(http.ResponseWriter, *http.Request) {}).Methods("GET")
	s := r.PathPrefix("/mux/api").Subrouter()
	s.HandleFunc("/items/{id:[0-9]+}", func(http.ResponseWriter, *http.Request) {}).Methods("GET", "PUT")
	s.Handle("/any", nil)
	return r
}
