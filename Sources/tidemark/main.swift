print("tidemark")
