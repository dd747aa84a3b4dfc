package withtests_test

func AlsoNotListed() {}
