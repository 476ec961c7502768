package storetest

var retentionTests = []test{}
