SELECT * FROM {this} WHERE day <> {partition}
