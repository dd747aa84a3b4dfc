package withtests

func Listed() {}
