package withtests

func NotListed() {}
