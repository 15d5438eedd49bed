from agent_memory.cli import main

main()
