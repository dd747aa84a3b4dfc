package main

func writeChart(path string, runs []runResult) error { return nil }
