-- Custom data test: the rows it returns fail. {this} is the rows about to be written.
SELECT order_id, amount FROM {this} WHERE amount <= 0
