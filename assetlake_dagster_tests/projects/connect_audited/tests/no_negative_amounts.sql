-- Custom test: the rows it returns fail. {this} is the staged rows under test.
SELECT order_id, amount FROM {this} WHERE amount < 0
